"""Where a benchmark writes its report: ``bench/results/<kind>-<UTC timestamp>.json`` (git ignores it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def write_results(kind: str, report: Mapping[str, Any] | list[Any], *, latest: bool = False) -> Path:
    """The report as indented JSON under a new timestamped name; with ``latest`` also as
    ``<kind>-latest.json``, which is the path returned then."""
    RESULTS_DIR.mkdir(exist_ok=True)
    text = json.dumps(report, indent=2) + "\n"
    path = RESULTS_DIR / f"{kind}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(text, encoding="utf-8")
    if latest:
        path = RESULTS_DIR / f"{kind}-latest.json"
        path.write_text(text, encoding="utf-8")
    return path
