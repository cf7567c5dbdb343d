"""Decision records stay short and indexed: one file per decision, each listed in docs/decisions/README.md,
each with its status and, unless superseded, its context, decision and consequences."""

from __future__ import annotations

import re
from pathlib import Path

DECISIONS = Path(__file__).resolve().parents[2] / "docs" / "decisions"


def records() -> list[Path]:
    return sorted(p for p in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))


def test_every_record_is_indexed_once() -> None:
    index = (DECISIONS / "README.md").read_text()
    linked = re.findall(r"\]\((\d{4}-[^)]+\.md)\)", index)
    assert sorted(linked) == [p.name for p in records()]


def test_numbers_are_unique() -> None:
    numbers = [p.name[:4] for p in records()]
    assert len(numbers) == len(set(numbers))


def test_records_are_short_and_complete() -> None:
    for path in records():
        text = path.read_text()
        assert len(text.splitlines()) <= 45, f"{path.name} is longer than a short record"
        if "Superseded by" in text:
            continue
        for heading in ("## Context", "## Decision", "## Consequences"):
            assert heading in text, f"{path.name} lacks {heading}"
