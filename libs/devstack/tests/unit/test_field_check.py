"""devstack.field_check: each throw-away field is one edit of the record's declaration (the field's line,
and what its type needs in the same module), and the copy holds the checkout's files as git sees them."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack import field_check

MODEL = field_check.ROOT / field_check.MODEL


def test_every_edit_lands_in_the_declaration_and_nothing_else_changes() -> None:
    source = MODEL.read_text(encoding="utf-8")
    edited = source
    for edit in field_check.EDITS:
        edited = field_check.apply(edited, edit)
    added = [line for line in edited.splitlines() if line not in source.splitlines()]
    attributes = [e.attribute.rstrip("\n") for e in field_check.EDITS]
    assert attributes == [line for line in added if line.startswith("    ") and ": " in line and " = " in line]
    record = edited.index("class Bookmark:")
    assert all(record < edited.index(a) < edited.index(field_check.ANCHOR) for a in attributes)
    assert "from datetime import date, datetime" in edited and "import enum\n" in edited
    compile(edited, str(MODEL), "exec")


@pytest.mark.parametrize("has_enum", [True, False])
def test_the_enum_import_is_there_once_whether_or_not_the_record_had_one(has_enum: bool) -> None:
    source = MODEL.read_text(encoding="utf-8")
    if not has_enum:
        source = source.replace("import enum\n", "", 1)
    assert ("\nimport enum\n" in source) is has_enum
    edited = source
    for edit in field_check.EDITS:
        edited = field_check.apply(edited, edit)
    assert edited.splitlines().count("import enum") == 1


def test_an_edit_without_its_anchor_is_refused() -> None:
    with pytest.raises(ValueError, match="no line starting"):
        field_check.apply("class Bookmark:\n    pass\n", field_check.EDITS[0])


def test_the_copy_holds_tracked_and_new_files_but_not_ignored_ones() -> None:
    names = field_check.tracked_files(field_check.ROOT)
    assert str(field_check.MODEL) in names and "Makefile" in names
    assert not any(name.startswith((".venv/", ".git/")) for name in names)


def test_every_selected_test_exists() -> None:
    assert field_check.selection_problems(field_check.ROOT) == []


def test_a_missing_file_or_a_renamed_test_is_reported(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("async def test_kept() -> None:\n    pass\n", encoding="utf-8")
    selection = [field_check.Selected("why", ("test_a.py::test_kept", "test_a.py::test_renamed", "test_gone.py"))]
    assert field_check.selection_problems(tmp_path, selection) == [
        "test_a.py::test_renamed: test_a.py defines no test_renamed",
        "test_gone.py: test_gone.py does not exist",
    ]
    with pytest.raises(SystemExit):
        field_check.check_selection(tmp_path / "elsewhere")
