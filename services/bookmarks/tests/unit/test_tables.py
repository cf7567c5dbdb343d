"""The records map onto their tables column for column (the bookmark's columns are built from its declaration)."""

from __future__ import annotations

import dataclasses

from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, collections


def test_every_column_is_an_attribute_of_its_record_and_back() -> None:
    # The search columns (the index of a record) and the stored wire document are written beside it by the
    # database, never part of it.
    assert {c.name for c in BOOKMARK_COLUMNS} == {f.name for f in dataclasses.fields(Bookmark)}
    assert {c.name for c in bookmarks.columns} - {c.name for c in BOOKMARK_COLUMNS} == {
        "search_vector",
        "search_head",
        "search_config",
        "search_tags",
        "search_page_text",
        "search_page_vector",
        "search_highlight_texts",
        "search_highlight_vector",
        "wire_document",
    }
    assert {c.name for c in collections.columns} == {f.name for f in dataclasses.fields(Collection)}
