"""record_from_row: a stored row, as the driver and the columns' types read it, becomes the same record
``cls(**values)`` would build, frozen as ever."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.dialects.postgresql.asyncpg import dialect as asyncpg_dialect

from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark, LinkStatus, record_from_row
from bookmarks.highlights.rules import Highlight
from bookmarks.store.tables import bookmarks

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
OWNER = uuid.uuid4()


def _row(cls: type[Any], **values: Any) -> dict[str, Any]:
    """Every field of ``cls`` as a column: the given values, else a value of the field's kind."""
    row: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in values:
            row[f.name] = values[f.name]
        elif f.default is not dataclasses.MISSING:
            row[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            row[f.name] = f.default_factory()
        else:
            row[f.name] = NOW if f.name.endswith("_at") else f"{f.name}-value"
    return row


def as_read(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (column values as the driver returns them: arrays as lists) after the bookmarks table's
    column types have read it, as a statement's result hands it to ``from_row``."""
    dialect = asyncpg_dialect()
    out = dict(row)
    for name, value in row.items():
        if (process := bookmarks.c[name].type.dialect_impl(dialect).result_processor(dialect, None)) is not None:
            out[name] = process(value)
    return out


def test_the_strings_columns_read_lists_as_tuples_and_null_as_none() -> None:
    read = as_read({"tags": ["ai", "web"], "user_tags": [], "collection_ids": None, "title": "t"})
    assert read == {"tags": ("ai", "web"), "user_tags": (), "collection_ids": None, "title": "t"}


def test_a_bookmark_row_gives_the_record_init_would_with_arrays_as_tuples_and_enums_typed() -> None:
    row = _row(
        Bookmark,
        owner_uid=OWNER,
        tags=["ai", "web"],
        user_tags=["mine"],
        collection_ids=[],
        link_status="gone",
        title=None,
    )
    record = Bookmark.from_row(as_read(row))
    expected = Bookmark(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()} | {"link_status": LinkStatus.GONE}
    )
    assert record == expected and hash(record) == hash(expected)
    assert record.tags == ("ai", "web") and record.collection_ids == () and record.link_status is LinkStatus.GONE
    assert dataclasses.asdict(record) == dataclasses.asdict(expected)


def test_a_bookmark_written_and_read_back_is_the_same_record() -> None:
    stored = Bookmark.from_row(as_read(_row(Bookmark, owner_uid=OWNER, user_tags=["a"], collection_ids=["c"])))
    row = stored.to_row()
    assert row["user_tags"] == ["a"] and row["collection_ids"] == ["c"] and row["owner_uid"] == OWNER
    assert Bookmark.from_row(as_read(row)) == stored


@pytest.mark.parametrize("cls", [Highlight, Collection])
def test_other_records_come_out_as_init_builds_them(cls: type[Any]) -> None:
    row = _row(cls, owner_uid=OWNER)
    assert record_from_row(cls, row) == cls(**row)


def test_a_record_from_a_row_stays_frozen() -> None:
    record = Bookmark.from_row(as_read(_row(Bookmark, owner_uid=OWNER)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.title = "changed"  # type: ignore[misc]


def test_a_row_without_a_field_s_column_is_refused() -> None:
    row = _row(Highlight, owner_uid=OWNER)
    del row["note"]
    with pytest.raises(KeyError):
        record_from_row(Highlight, row)
