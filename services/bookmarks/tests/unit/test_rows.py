"""store/rows.py: the bookmark row's statements carry the installed index's columns, and refuse to be built
without one (a row without its search columns would be missing from search)."""

from __future__ import annotations

import pytest
from sqlalchemy.dialects import postgresql

import bookmarks.main  # noqa: F401 - installs search's index, as every process does
from bookmarks.search.index import SEARCH_INDEX
from bookmarks.store import rows


def test_main_installs_search_and_the_statements_write_its_columns() -> None:
    assert rows.index() is SEARCH_INDEX
    for tombstone in (False, True):
        sql = str(rows.put_statement(tombstone).compile(dialect=postgresql.dialect()))
        assert "search_vector" in sql and "search_tags" in sql
        update = str(rows.update_many_statement(tombstone).compile(dialect=postgresql.dialect()))
        assert "search_vector" in update


def test_without_an_index_the_row_is_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows, "_installed", [])
    with pytest.raises(RuntimeError, match="no index installed"):
        rows.index()


def test_a_second_index_is_refused() -> None:
    with pytest.raises(RuntimeError, match="already has an index"):
        rows.install_index(type(SEARCH_INDEX)())
    rows.install_index(SEARCH_INDEX)  # the same one again changes nothing
