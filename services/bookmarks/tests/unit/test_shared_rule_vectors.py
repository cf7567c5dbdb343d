"""The user-tag rule and the search query parser against the vectors the clients' tests run too
(clients/shared/vectors/tags.json and query.json; README.md there says how a case is added)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bookmarks.domain.tags import normalize_user_tags, tag_key
from bookmarks.search.folding import _mark_ranges
from bookmarks.search.query import InvalidQuery, parse_query

SHARED = Path(__file__).resolve().parents[4] / "clients" / "shared"


def _cases(name: str, key: str = "cases") -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((SHARED / "vectors" / name).read_text(encoding="utf-8"))[key]
    return cases


def _id(case: dict[str, Any]) -> str:
    return str(case.get("note") or case["input"])[:60]


@pytest.mark.parametrize("case", _cases("tags.json"), ids=_id)
def test_user_tags(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(ValueError) as caught:
            normalize_user_tags(case["input"])
        assert str(caught.value) == case["error"]
    else:
        assert list(normalize_user_tags(case["input"])) == case["output"]


@pytest.mark.parametrize("case", _cases("tags.json", "keys"), ids=lambda case: case["tag"])
def test_tag_keys(case: dict[str, str]) -> None:
    assert tag_key(case["tag"]) == case["key"]


@pytest.mark.parametrize("case", _cases("query.json"), ids=_id)
def test_search_query(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(InvalidQuery) as caught:
            parse_query(case["input"])
        assert (caught.value.message, caught.value.part) == (case["error"], case["part"])
    else:
        assert parse_query(case["input"]).canonical() == case["canonical"]


def test_every_case_has_an_expected_answer() -> None:
    for name, fields in (("tags.json", ("output", "error")), ("query.json", ("canonical", "error"))):
        for case in _cases(name):
            assert any(f in case for f in fields), f"{name}: {case['input']!r} has no expected answer (README.md)"


def test_the_clients_search_folding_drops_the_servers_marks() -> None:
    """clients/shared/unicode.ts lists the combining marks that bookmarks.search.folding.fold drops."""
    source = (SHARED / "unicode.ts").read_text(encoding="utf-8")
    written = re.search(r"const MARKS = /\[(.*)\]/gu;", source)
    assert written is not None
    expected = "".join(
        f"\\u{{{first:x}}}" if first == last else f"\\u{{{first:x}}}-\\u{{{last:x}}}" for first, last in _mark_ranges()
    )
    assert written.group(1) == expected, (
        f"write this class into unicode.ts between MARKS-BEGIN and MARKS-END: {expected}"
    )
