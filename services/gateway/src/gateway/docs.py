"""``/docs``: Swagger UI served entirely by the gateway; no request leaves the machine.

The Swagger UI distribution files come from the ``fastapi-offline`` package (its ``static`` folder; only
the files are used, not its FastAPI subclass) and are served under ``/docs/assets/``. The page and its
assets carry a Content-Security-Policy that allows nothing but the gateway itself (and ``data:`` images,
which Swagger UI's stylesheet embeds), so a browser refuses to load anything from anywhere else: the
start-up script is one of those assets rather than inline code, and it reads the spec URL from the
page.
"""

from __future__ import annotations

import functools
import hashlib
import html
from dataclasses import dataclass
from importlib.resources import files

DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/assets"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

_INIT_JS = b"""(function () {
  var specUrl = document.getElementById("swagger-ui").getAttribute("data-spec-url");
  // validatorUrl: null, or Swagger UI shows a badge image fetched from the public validator.
  window.ui = SwaggerUIBundle({ url: specUrl, dom_id: "#swagger-ui", deepLinking: true, validatorUrl: null });
})();
"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>__TITLE__</title>
<link rel="icon" type="image/png" href="__ASSETS__/favicon.png">
<link rel="stylesheet" href="__ASSETS__/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-spec-url="__SPEC__"></div>
<noscript><p>The interactive reference needs JavaScript. The machine-readable description is at
<a href="__SPEC__">__SPEC__</a>.</p></noscript>
<script src="__ASSETS__/swagger-ui-bundle.js"></script>
<script src="__ASSETS__/init.js"></script>
</body>
</html>
"""


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    media_type: str
    etag: str

    @classmethod
    def of(cls, body: bytes, media_type: str) -> Asset:
        return cls(body, media_type, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')


_MEDIA_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}


@functools.cache
def asset(name: str) -> Asset | None:
    """One file of the docs page, read once; None for any other name."""
    if name == "init.js":
        return Asset.of(_INIT_JS, "text/javascript; charset=utf-8")
    media_type = _MEDIA_TYPES.get(name)
    if media_type is None:
        return None
    return Asset.of(files("fastapi_offline").joinpath("static", name).read_bytes(), media_type)


def docs_html(*, title: str, spec_url: str) -> str:
    return (
        _PAGE.replace("__TITLE__", html.escape(title))
        .replace("__ASSETS__", ASSETS_PATH)
        .replace("__SPEC__", html.escape(spec_url, quote=True))
    )


def asset_names() -> list[str]:
    return ["init.js", *_MEDIA_TYPES]
