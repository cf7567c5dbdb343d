"""Comments, docstrings and docs speak about this repository in the present: no issue numbers, no
sections of documents outside the repository, no "ARCHITECTURE rule N" without the file's name, no
figures of what a value used to be. docs/api-guide.md numbers its own sections and may cite them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = re.compile(
    r"issue [0-9]+|ARCHITECTURE rule [0-9]|§[A-Z]?[0-9]|was [0-9.]+ ?(ms|s|µs)\b"
    r"|decisions\.md|decisions-made|service-spec|extensions\.md|clients\.md|\.\./shared"
)
ALLOWED_FILES = {"docs/api-guide.md", "tests/docs/test_comment_hygiene.py"}


def tracked_text_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.splitlines() if name not in ALLOWED_FILES]


def offending_lines(name: str) -> list[str]:
    try:
        text = (ROOT / name).read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return []
    return [f"{name}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if FORBIDDEN.search(line)]


def test_no_issue_numbers_outside_sections_or_history_in_the_repository() -> None:
    found = [hit for name in tracked_text_files() for hit in offending_lines(name)]
    assert not found, "\n".join(found[:40])


def test_the_pattern_catches_what_it_must() -> None:
    # Assembled at run time, so that this file itself holds none of the citations it forbids.
    samples = ("# see issue {}", "(ARCHITECTURE rule {})", "per §E{}", "docs/api-guide.md §1{}", "(was {} s)")
    for line in (sample.format(5) for sample in samples):
        assert FORBIDDEN.search(line), line
    assert not FORBIDDEN.search("ARCHITECTURE.md, rule 2; docs/api-guide.md, section 12")
