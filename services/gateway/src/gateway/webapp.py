"""The web app's files: its shell at ``/`` and everything else of the build under ``/app/``.

The build directory (``GATEWAY_WEB_DIR``, made by ``make web``) is read once when the app is created and
served from memory: a few hundred KiB that never change while the process runs. Text files are also kept
gzip-compressed for clients that accept it. Files under ``assets/`` carry a content hash in their names,
so they are cached for a year; the shell and the other files (service worker, manifest, icons) are
revalidated on every use so a new build reaches the browser at once.

Every answer carries the page security headers: a Content-Security-Policy that allows scripts and styles
from this origin only (no inline code, no eval), connections to this origin and its WebSocket, and no
framing by other sites.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import Response

from common.errors import NotFound

SHELL = "index.html"
APP_PREFIX = "/app/"
HASHED_DIR = "assets/"
# Text types gzip well; images and fonts arrive already compressed.
_COMPRESSIBLE = ("text/", "application/javascript", "application/json", "application/manifest+json", "image/svg")
_TYPES = {
    ".js": "application/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".webmanifest": "application/manifest+json",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# A Host header is echoed into the policy's WebSocket source only when it is a plain host[:port].
_HOST = re.compile(r"^[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?$")
MAX_FILES = 2000
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class WebFile:
    body: bytes
    gzipped: bytes | None
    content_type: str
    cache_control: str
    etag: str


def content_security_policy(host: str | None) -> str:
    """The page policy; ``host`` (the request's Host) adds its ws/wss origin for the events socket."""
    connect = "'self'"
    if host and _HOST.match(host):
        connect += f" ws://{host} wss://{host}"
    return "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data: blob:",
            f"connect-src {connect}",
            "frame-src 'self'",
            "worker-src 'self'",
            "manifest-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


def security_headers(request: Request) -> dict[str, str]:
    return {
        "Content-Security-Policy": content_security_policy(request.headers.get("host")),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
    }


def _content_type(name: str) -> str:
    suffix = Path(name).suffix.lower()
    return _TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def _load_file(path: Path, relative: str) -> WebFile:
    body = path.read_bytes()
    content_type = _content_type(relative)
    gzipped = None
    if content_type.startswith(_COMPRESSIBLE) and len(body) > 256:
        gzipped = gzip.compress(body, compresslevel=9, mtime=0)
    return WebFile(
        body=body,
        gzipped=gzipped,
        content_type=content_type,
        cache_control=IMMUTABLE if relative.startswith(HASHED_DIR) else REVALIDATE,
        etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
    )


def load_web_dir(directory: Path) -> dict[str, WebFile]:
    """Every regular file of the build, by its path relative to ``directory`` (``assets/app-X.js``)."""
    if not (directory / SHELL).is_file():
        raise ValueError(f"GATEWAY_WEB_DIR {directory} has no {SHELL}: build it with `make web`")
    files: dict[str, WebFile] = {}
    for path in sorted(directory.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        if len(files) >= MAX_FILES or path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"GATEWAY_WEB_DIR {directory} is too large to serve from memory")
        relative = path.relative_to(directory).as_posix()
        files[relative] = _load_file(path, relative)
    return files


class WebApp:
    def __init__(self, files: dict[str, WebFile]) -> None:
        self.files = files

    def response(self, request: Request, name: str) -> Response:
        found = self.files.get(name)
        if found is None:
            raise NotFound("No such file of the web app.")
        headers = security_headers(request)
        headers["Cache-Control"] = found.cache_control
        headers["ETag"] = found.etag
        headers["Vary"] = "Accept-Encoding"
        if name == "sw.js":
            # The worker lives under /app/ but controls the whole app, shell included.
            headers["Service-Worker-Allowed"] = "/"
        if found.etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        body = found.body
        if found.gzipped is not None and "gzip" in request.headers.get("accept-encoding", "").lower():
            body = found.gzipped
            headers["Content-Encoding"] = "gzip"
        if request.method == "HEAD":
            headers["Content-Length"] = str(len(body))
            return Response(status_code=200, headers=headers, media_type=found.content_type)
        return Response(body, headers=headers, media_type=found.content_type)


def build_web_router(web: WebApp) -> APIRouter:
    router = APIRouter()

    async def shell(request: Request) -> Response:
        return web.response(request, SHELL)

    async def app_file(request: Request, path: str) -> Response:
        return web.response(request, path)

    router.add_api_route("/", shell, methods=["GET", "HEAD"], include_in_schema=False)
    router.add_api_route(APP_PREFIX + "{path:path}", app_file, methods=["GET", "HEAD"], include_in_schema=False)
    return router
