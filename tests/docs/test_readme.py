"""The README documents what the code really reads, and the code reads what decisions.md §2 names."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT.parent / "shared" / "spec" / "decisions.md"


def variables_read_by_the_code() -> set[str]:
    names: set[str] = set()
    for path in [*ROOT.glob("libs/*/src/**/*.py"), *ROOT.glob("services/*/src/**/*.py")]:
        names |= set(re.findall(r'validation_alias="([A-Z][A-Z0-9_]+)"', path.read_text()))
    return names


def test_every_variable_the_code_reads_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", readme))
    missing = sorted(variables_read_by_the_code() - documented)
    assert not missing, f"README does not document: {missing}"


def test_every_variable_of_the_contract_is_read() -> None:
    if not DECISIONS.exists():
        return  # the spec lives beside the repo, not inside it
    section = DECISIONS.read_text().split("## 2.")[1].split("## 3.")[0]
    contract = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", section))
    read = variables_read_by_the_code() | {"GATEWAY_HOST", "GATEWAY_PORT"}
    assert not sorted(contract - read), f"decisions.md §2 names variables no service reads: {sorted(contract - read)}"


def test_readme_leads_with_the_two_commands() -> None:
    head = (ROOT / "README.md").read_text()[:1500]
    assert "make run" in head and "make test" in head
