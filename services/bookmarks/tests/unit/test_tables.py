"""The records map onto their tables column for column (what makes a new field one attribute + one column)."""

from __future__ import annotations

import dataclasses

from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import bookmarks, collections


def test_every_column_is_an_attribute_of_its_record_and_back() -> None:
    assert {c.name for c in bookmarks.columns} == {f.name for f in dataclasses.fields(Bookmark)}
    assert {c.name for c in collections.columns} == {f.name for f in dataclasses.fields(Collection)}
