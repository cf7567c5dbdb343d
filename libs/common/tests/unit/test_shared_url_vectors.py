"""URL normalization against the vectors the clients' tests run too (clients/shared/vectors/urls.json;
README.md there says how a case is added)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from common.urls import InvalidUrlError, normalize_url

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[4] / "clients" / "shared" / "vectors" / "urls.json").read_text(encoding="utf-8")
)["cases"]


@pytest.mark.parametrize("case", CASES, ids=lambda case: str(case.get("note") or case["input"])[:60])
def test_url(case: dict[str, Any]) -> None:
    assert "url" in case or "error" in case, "a case without an expected answer (README.md)"
    if "error" in case:
        with pytest.raises(InvalidUrlError) as caught:
            normalize_url(case["input"])
        assert str(caught.value) == case["error"]
    else:
        normalized = normalize_url(case["input"])
        assert (normalized.url, normalized.domain) == (case["url"], case["domain"])
