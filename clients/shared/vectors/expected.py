"""Write the server's answers into the shared rule vectors (README.md in this folder): for every case of
tags.json, urls.json and query.json, the expected fields are computed by the Python rule and written back.

    .venv/bin/python clients/shared/vectors/expected.py

Review the diff: the tests take these files as the contract for both sides.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

from bookmarks.domain.tags import normalize_user_tags, tag_key
from bookmarks.search.query import InvalidQuery, parse_query
from common.urls import InvalidUrlError, normalize_url

HERE = Path(__file__).parent


def tag_case(case: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in case.items() if k in ("note", "input")}
    try:
        out["output"] = list(normalize_user_tags(case["input"]))
    except ValueError as exc:
        out["error"] = str(exc)
    return out


def url_case(case: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in case.items() if k in ("note", "input")}
    try:
        normalized = normalize_url(case["input"])
    except InvalidUrlError as exc:
        out["error"] = str(exc)
    else:
        out["url"], out["domain"] = normalized.url, normalized.domain
    return out


def query_case(case: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in case.items() if k in ("note", "input")}
    try:
        out["canonical"] = parse_query(case["input"]).canonical()
    except InvalidQuery as exc:
        out["error"] = exc.message
        out["part"] = exc.part
    return out


def _shown(char: str) -> str:
    # Invisible characters (controls, format, separators other than space, lone marks) as JSON escapes.
    if char.isprintable() and not unicodedata.combining(char):
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _line(value: object) -> str:
    return re.sub(r"[^\x20-\x7e]", lambda m: _shown(m.group()), json.dumps(value, ensure_ascii=False))


def dump(path: Path, data: dict[str, Any]) -> None:
    """One case a line, so that a diff shows the cases that changed."""
    parts = []
    for key, value in data.items():
        if isinstance(value, list):
            rows = ",\n".join(f"  {_line(item)}" for item in value)
            parts.append(f"{_line(key)}: [\n{rows}\n ]")
        else:
            parts.append(f"{_line(key)}: {_line(value)}")
    path.write_text("{\n " + ",\n ".join(parts) + "\n}\n", encoding="utf-8")


def main() -> None:
    tags = json.loads((HERE / "tags.json").read_text(encoding="utf-8"))
    tags["cases"] = [tag_case(c) for c in tags["cases"]]
    tags["keys"] = [{"tag": k["tag"], "key": tag_key(k["tag"])} for k in tags["keys"]]
    dump(HERE / "tags.json", tags)
    urls = json.loads((HERE / "urls.json").read_text(encoding="utf-8"))
    urls["cases"] = [url_case(c) for c in urls["cases"]]
    dump(HERE / "urls.json", urls)
    query = json.loads((HERE / "query.json").read_text(encoding="utf-8"))
    query["cases"] = [query_case(c) for c in query["cases"]]
    dump(HERE / "query.json", query)


if __name__ == "__main__":
    sys.exit(main())
