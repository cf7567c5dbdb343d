"""`bookmarks import`: its options and its progress bar."""

from __future__ import annotations

import pytest

from bookmark_client.cli import _progress_bar, build_parser
from bookmark_client.models import ImportRecord


def test_import_options() -> None:
    args = vars(build_parser({}).parse_args(["import", "export.csv"]))
    assert (args["file"], args["format"]) == ("export.csv", "auto")
    assert vars(build_parser({}).parse_args(["import", "f.zip", "--format", "omnivore"]))["format"] == "omnivore"
    with pytest.raises(SystemExit):
        build_parser({}).parse_args(["import", "f", "--format", "excel"])


def test_progress_bar() -> None:
    record = ImportRecord(id="i", status="running", format="netscape", total=200, processed=50)
    assert _progress_bar(record, width=8) == "[##......] 50/200"
    counting = ImportRecord(id="i", status="queued", format="auto", total=None, processed=0)
    assert _progress_bar(counting, width=4) == "[    ] 0 items (queued)"
