"""``/docs``: Swagger UI when its assets (from a CDN) load, otherwise a plain endpoint list.

The fallback is rendered in the page from ``/v1/openapi.json`` itself, so the docs stay usable on a
machine without internet access.
"""

from __future__ import annotations

import json

SWAGGER_JS = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js"
SWAGGER_CSS = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css"

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>__TITLE__</title>
<link rel="stylesheet" href="__CSS__">
<style>
  body { font-family: system-ui, sans-serif; margin: 0; }
  #fallback { display: none; padding: 1rem 2rem; }
  #fallback td { padding: .2rem .8rem .2rem 0; vertical-align: top; }
  #fallback code { font-size: .95em; }
</style>
</head>
<body>
<div id="swagger-ui"></div>
<div id="fallback">
  <h1>__TITLE__</h1>
  <p>Interactive docs need Swagger UI from a CDN, which is not reachable. The full machine-readable
  description is at <a href="__SPEC__">__SPEC__</a>.</p>
  <div id="description"></div>
  <table id="endpoints"><tbody></tbody></table>
</div>
<script>
  const specUrl = __SPEC_JSON__;
  function fallback() {
    document.getElementById("fallback").style.display = "block";
    fetch(specUrl).then(r => r.json()).then(doc => {
      const pre = document.createElement("pre");
      pre.textContent = (doc.info && doc.info.description) || "";
      pre.style.whiteSpace = "pre-wrap";
      document.getElementById("description").appendChild(pre);
      const body = document.querySelector("#endpoints tbody");
      for (const [path, item] of Object.entries(doc.paths || {})) {
        for (const [method, op] of Object.entries(item)) {
          if (typeof op !== "object" || !op.responses) continue;
          const row = body.insertRow();
          row.insertCell().innerHTML = "<code></code>";
          row.cells[0].firstChild.textContent = method.toUpperCase() + " " + path;
          row.insertCell().textContent = op.summary || op.description || "";
        }
      }
    });
  }
  const script = document.createElement("script");
  script.src = __JS_JSON__;
  script.onload = () => {
    window.ui = SwaggerUIBundle({ url: specUrl, dom_id: "#swagger-ui", deepLinking: true });
  };
  script.onerror = fallback;
  document.head.appendChild(script);
</script>
</body>
</html>
"""


def docs_html(*, title: str, spec_url: str) -> str:
    return (
        _PAGE.replace("__TITLE__", title)
        .replace("__CSS__", SWAGGER_CSS)
        .replace("__SPEC_JSON__", json.dumps(spec_url))
        .replace("__JS_JSON__", json.dumps(SWAGGER_JS))
        .replace("__SPEC__", spec_url)
    )
