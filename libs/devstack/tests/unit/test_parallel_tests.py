"""The parallel test runner: every group runs, its output is printed whole, a failure is the exit status."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.parallel_tests import main

PASSING = "def test_ok():\n    assert True\n"
FAILING = "def test_broken():\n    assert False\n"


def _suite(root: Path, name: str, body: str) -> str:
    folder = root / name
    folder.mkdir()
    (folder / f"test_{name}.py").write_text(body)
    return str(folder)


def test_groups_run_side_by_side_and_a_failure_is_the_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = _suite(tmp_path, "good", PASSING), _suite(tmp_path, "bad", FAILING)
    code = main(["--group", good, "--group", bad, "--", "-q", "-p", "no:cacheprovider"])
    out = capsys.readouterr().out
    assert code == 1
    assert "1 passed" in out and "1 failed" in out
    assert f"parallel_tests: {good}: exit 0" in out and f"parallel_tests: {bad}: exit 1" in out


def test_a_group_that_collects_nothing_is_no_failure(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    good = _suite(tmp_path, "good", PASSING)
    assert main(["--group", str(empty), "--group", good, "--", "-q", "-p", "no:cacheprovider"]) == 0
