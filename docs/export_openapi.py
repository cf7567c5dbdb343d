"""Write the public OpenAPI document (the one the gateway serves at /v1/openapi.json) to docs/openapi.json.

The gateway builds it at run time from the services' own documents; this builds it the same way from
the services' apps, without starting anything (``create_app`` opens no connection), so the contract is
readable in the repository. ``make openapi`` runs it; tests/docs fails when the file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent / "openapi.json"


def build() -> dict[str, Any]:
    from auth.main import create_app as auth_app
    from bookmarks.main import create_app as bookmarks_app
    from enrichment.main import create_app as enrichment_app
    from gateway.openapi import combine

    documents = {
        "auth": auth_app().openapi(),
        "bookmarks": bookmarks_app().openapi(),
        "enrichment": enrichment_app().openapi(),
    }
    return combine(documents, title="Bookmark Sync and Enrichment API", version="1.0.0")


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    OUTPUT.write_text(render())
    sys.stdout.write(f"wrote {OUTPUT}\n")
