"""This service's own JSON export (version 1) read back for import."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bookmarks.imports.formats import ImportCollection, ImportFormatError, ImportItem, iter_items, json_collections

FIXTURES = Path(__file__).parent / "fixtures"


def parse(data: bytes) -> list[ImportItem]:
    return list(iter_items(io.BytesIO(data), "json"))


def test_every_client_field_is_read_and_collection_ids_become_name_paths() -> None:
    items = parse((FIXTURES / "export_v1.json").read_bytes())
    assert [item.line for item in items] == [8, 10, 11, 12]
    full, offline, bad, not_object = items
    assert full.client_bookmark_id == "bm-1"
    assert full.url == "https://paulgraham.com/greatwork.html"
    assert (full.title, full.description) == ("How to Do Great Work", "An essay.")
    assert full.notes == "Re-read every year.\nSeriously."
    assert (full.is_favorite, full.is_archived) == (True, False)
    assert full.user_tags == ("essays", "careers")
    assert full.collection_paths == (("Reading", "Essays"), ("Reading",))
    assert full.saved_at == datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert full.last_opened_at == datetime(2026, 10, 1, 8, 30, tzinfo=UTC)
    assert full.valid and full.warnings == ()
    assert (offline.is_archived, offline.collection_paths) == (True, ())
    assert offline.warnings == ("collection id(s) col-not-yet-synced not in the export; not filed there",)
    assert bad.reason == "isFavorite must be true or false."
    assert not_object.reason == "The bookmark is not a JSON object."


def test_collections_are_listed_with_their_paths_including_empty_ones() -> None:
    with (FIXTURES / "export_v1.json").open("rb") as fp:
        assert json_collections(fp) == (
            ImportCollection(id="col-reading", path=("Reading",)),
            ImportCollection(id="col-essays", path=("Reading", "Essays")),
            ImportCollection(id="col-empty", path=("Empty for now",)),
        )


def test_parent_cycles_and_missing_parents_do_not_loop() -> None:
    doc = {
        "version": 1,
        "collections": [
            {"id": "a", "name": "A", "parentId": "b"},
            {"id": "b", "name": "B", "parentId": "a"},
            {"id": "c", "name": "C", "parentId": "gone"},
        ],
        "bookmarks": [],
    }
    paths = {c.id: c.path for c in json_collections(io.BytesIO(json.dumps(doc).encode()))}
    assert paths == {"a": ("B", "A"), "b": ("A", "B"), "c": ("C",)}


def test_key_order_other_than_the_exports_and_unknown_keys() -> None:
    doc = b'{"future": {"x": [1, 2]}, "version": 1, "bookmarks": [{"url": "https://a.example/"}], "exportedAt": "x"}'
    [item] = parse(doc)
    assert item.url == "https://a.example/" and item.is_favorite is None and item.valid


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b'{"version": 2, "bookmarks": []}', "Unsupported export version"),
        (b'{"bookmarks": []}', 'no "version"'),
        (b'[{"url": "https://a.example/"}]', "expected an object"),
        (b'{"version": 1, "bookmarks": [{"url": "https://a.example/"} {"url": "x"}]}', "expected ',' or ']'"),
        (b'{"version": 1, "bookmarks": [', "Invalid JSON"),
        (b'{"version": 1, "collections": [{"id": 1}], "bookmarks": []}', "a collection needs a string id and name"),
    ],
)
def test_broken_exports_fail_clearly(doc: bytes, message: str) -> None:
    with pytest.raises(ImportFormatError, match=message):
        parse(doc)


def test_a_bookmark_split_across_read_chunks_and_numbers_at_chunk_ends(tmp_path: Path) -> None:
    bookmarks = [{"url": f"https://a.example/{n}", "title": "x" * (n % 7000), "userTags": [str(n)]} for n in range(300)]
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"version": 1, "bookmarks": bookmarks}, indent=1))
    with path.open("rb") as fp:
        items = list(iter_items(fp, "json"))
    assert [item.url for item in items] == [b["url"] for b in bookmarks]
    assert [item.user_tags for item in items] == [(str(n),) for n in range(300)]


def test_collections_after_the_bookmarks_are_still_applied(tmp_path: Path) -> None:
    bookmarks = [{"url": f"https://a.example/{n}", "collectionIds": ["c1"], "notes": "n" * 500} for n in range(3000)]
    doc = {"version": 1, "bookmarks": bookmarks, "collections": [{"id": "c1", "name": "Late", "parentId": None}]}
    path = tmp_path / "late.json"
    path.write_text(json.dumps(doc))
    with path.open("rb") as fp:
        items = list(iter_items(fp, "json"))
    assert len(items) == 3000
    assert {item.collection_paths for item in items} == {(("Late",),)}


def test_a_big_unknown_array_is_skipped_element_by_element() -> None:
    doc = {
        "version": 1,
        "attachments": ["x" * 100_000 for _ in range(30)],
        "bookmarks": [{"url": "https://a.example/"}],
    }
    assert [item.url for item in parse(json.dumps(doc).encode())] == ["https://a.example/"]


def test_ids_and_thumbnails_that_could_not_be_written_back_are_dropped_with_a_note() -> None:
    doc = b'{"version": 1, "bookmarks": [{"url": "https://a.example/", "clientBookmarkId": "has space", "thumbnailUrl": "javascript:x"}]}'
    [item] = parse(doc)
    assert (item.client_bookmark_id, item.thumbnail_url, item.valid) == (None, None, True)
    assert item.warnings == ("clientBookmarkId is not a valid id; not kept",)
