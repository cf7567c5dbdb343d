"""The local profile: queue order and persistence, and how server copies meet queued edits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bookmark_client.models import Session, User
from bookmark_client.store import LocalStore


def server_copy(bookmark_id: str, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "ownerUid": "u1",
        "clientBookmarkId": bookmark_id,
        "url": f"https://example.com/{bookmark_id}",
        "normalizedUrl": f"https://example.com/{bookmark_id}",
        "domain": "example.com",
        "title": None,
        "description": None,
        "thumbnailUrl": None,
        "summary": None,
        "saveWhy": None,
        "tags": [],
        "enrichmentStatus": "pending",
        "snapshotStatus": "pending",
        "lastErrorCode": None,
        "isFavorite": False,
        "collectionIds": [],
        "notes": None,
        "clientSavedAt": "2030-01-01T00:00:00Z",
        "lastOpenedAt": None,
        "createdAt": "2030-01-01T00:00:00Z",
        "updatedAt": "2030-01-01T00:00:01Z",
        "enrichedAt": None,
    }
    record.update(fields)
    return record


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LocalStore]:
    opened = await LocalStore.open(tmp_path / "profile.sqlite")
    yield opened
    await opened.close()


async def test_queue_keeps_order_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "profile.sqlite"
    store = await LocalStore.open(path)
    await store.queue_put("a", {"url": "https://a.example/"})
    await store.queue_put("b", {"url": "https://b.example/", "title": "B"})
    await store.queue_delete("a")
    await store.queue_collections("b", ["c1", "c2"])
    await store.queue_put("b", {"notes": "n"})
    await store.close()

    reopened = await LocalStore.open(path)
    try:
        ops = await reopened.pending_ops()
        assert [(op.kind, op.bookmark_id) for op in ops] == [
            ("put", "a"),
            ("put", "b"),
            ("delete", "a"),
            ("collections", "b"),
            ("put", "b"),
        ]
        assert [op.seq for op in ops] == sorted(op.seq for op in ops)
        assert (await reopened.next_op()) == ops[0]
        # A partial edit resends the known url: PUT requires it.
        assert ops[4].payload == {"fields": {"notes": "n", "url": "https://b.example/"}}
        # A new bookmark gets clientSavedAt = now (the moment the user saved it).
        assert "clientSavedAt" in ops[0].payload["fields"]

        a = await reopened.get_bookmark("a")
        b = await reopened.get_bookmark("b")
        assert a is not None and a["deleted"] and a["pending"]
        assert b is not None and not b["deleted"]
        assert b["title"] == "B" and b["notes"] == "n" and b["collectionIds"] == ["c1", "c2"]
        assert b["domain"] == "b.example"  # provisional until the server's normalized domain arrives
        assert [r["clientBookmarkId"] for r in await reopened.list_bookmarks()] == ["b"]
        assert {r["clientBookmarkId"] for r in await reopened.list_bookmarks(include_deleted=True)} == {"a", "b"}
    finally:
        await reopened.close()


async def test_sequence_numbers_are_never_reused(store: LocalStore) -> None:
    first = await store.queue_put("a", {"url": "https://a.example/"})
    await store.complete_op(first, server_copy("a"))
    second = await store.queue_delete("a")
    assert second.seq > first.seq


async def test_put_without_url_for_unknown_bookmark_is_refused(store: LocalStore) -> None:
    with pytest.raises(ValueError, match="url is required"):
        await store.queue_put("nope", {"title": "x"})
    with pytest.raises(LookupError):
        await store.queue_collections("nope", ["c"])
    assert await store.pending_count() == 0


async def test_completed_op_takes_server_copy_and_keeps_later_ops_on_top(store: LocalStore) -> None:
    put = await store.queue_put("a", {"url": "https://example.com/a", "title": "one"})
    await store.queue_put("a", {"title": "two"})
    await store.complete_op(put, server_copy("a", title="one", domain="example.com", normalizedUrl="n"))
    view = await store.get_bookmark("a")
    assert view is not None
    assert view["title"] == "two"  # the later queued edit still shows
    assert view["normalizedUrl"] == "n"  # server-set field from the accepted write
    assert view["pending"]


async def test_rejected_op_is_recorded_and_its_local_effect_rolled_back(store: LocalStore) -> None:
    await store.apply_delta_page([server_copy("a", title="server")], [], cursor="c1")
    op = await store.queue_put("a", {"title": "too long, say"})
    rejected = await store.reject_op(op, status=400, code="invalid-request", message="title too long")
    view = await store.get_bookmark("a")
    assert view is not None and view["title"] == "server" and not view["pending"]
    assert rejected.code == "invalid-request"
    assert [(r.seq, r.code, r.message) for r in await store.rejected_ops()] == [
        (op.seq, "invalid-request", "title too long")
    ]

    # A bookmark created offline and rejected disappears: the server never had it.
    created = await store.queue_put("new", {"url": "https://new.example/"})
    await store.reject_op(created, status=400, code="invalid-url", message="bad")
    assert await store.get_bookmark("new") is None


async def test_delta_keeps_pending_client_fields_and_accepts_server_fields(store: LocalStore) -> None:
    await store.apply_delta_page([server_copy("a", title="server title")], [], cursor="c1")
    await store.queue_put("a", {"title": "my offline title", "notes": "mine"})

    # An older server copy (fetched before our edit reached the server), now enriched and favorited
    # by another device.
    newer_server = server_copy(
        "a",
        title="Enriched Title",
        notes=None,
        isFavorite=True,
        summary="A summary.",
        saveWhy="Because.",
        tags=["python", "sync"],
        enrichmentStatus="completed",
        snapshotStatus="ready",
        enrichedAt="2030-01-01T00:00:05Z",
        updatedAt="2030-01-01T00:00:05Z",
    )
    changed = await store.apply_delta_page([newer_server], [], cursor="c2")
    view = await store.get_bookmark("a")
    assert view is not None
    assert changed.bookmarks == ["a"]
    # Queued client fields win until flushed...
    assert view["title"] == "my offline title"
    assert view["notes"] == "mine"
    # ...fields nobody edited here follow the server, enrichment fields always do.
    assert view["isFavorite"] is True
    assert view["summary"] == "A summary." and view["saveWhy"] == "Because."
    assert view["tags"] == ["python", "sync"]
    assert view["enrichmentStatus"] == "completed" and view["snapshotStatus"] == "ready"
    assert view["enrichedAt"] == "2030-01-01T00:00:05Z"
    assert await store.cursor() == "c2"

    # Once the edit is accepted, the server's copy rules again.
    op = await store.next_op()
    assert op is not None
    await store.complete_op(op, {**newer_server, "title": "my offline title", "notes": "mine"})
    later = server_copy("a", title="Edited elsewhere", notes="mine", isFavorite=True, updatedAt="2030-01-01T00:00:09Z")
    await store.apply_delta_page([later], [], cursor="c3")
    view = await store.get_bookmark("a")
    assert view is not None and view["title"] == "Edited elsewhere" and not view["pending"]


async def test_enriched_title_is_taken_when_nothing_is_queued(store: LocalStore) -> None:
    await store.apply_delta_page([server_copy("a", title="typed by user")], [], cursor="c1")
    await store.apply_delta_page(
        [
            server_copy(
                "a", title="Page Title", description="d", thumbnailUrl="https://t/", enrichmentStatus="completed"
            )
        ],
        [],
        cursor="c2",
    )
    view = await store.get_bookmark("a")
    assert view is not None
    assert (view["title"], view["description"], view["thumbnailUrl"]) == ("Page Title", "d", "https://t/")


async def test_tombstones_against_queued_writes(store: LocalStore) -> None:
    await store.apply_delta_page([server_copy("a"), server_copy("b"), server_copy("c")], [], cursor="c1")
    await store.queue_put("a", {"notes": "revive me"})  # queued PUT will revive it on the server
    await store.queue_collections("b", ["x"])  # not a revival: the tombstone wins

    changed = await store.apply_delta_page(
        [],
        [{"clientBookmarkId": cid, "deletedAt": "2030-01-02T00:00:00Z"} for cid in ("a", "b", "c", "never-seen")],
        cursor="c2",
    )
    a, b, c = [await store.get_bookmark(x) for x in ("a", "b", "c")]
    assert a is not None and not a["deleted"] and a["notes"] == "revive me"
    assert b is not None and b["deleted"]
    assert c is not None and c["deleted"] and c["deletedAt"] == "2030-01-02T00:00:00Z"
    assert await store.get_bookmark("never-seen") is None
    assert sorted(changed.bookmarks) == ["b", "c"]


async def test_queued_delete_survives_a_server_upsert(store: LocalStore) -> None:
    await store.apply_delta_page([server_copy("a")], [], cursor="c1")
    await store.queue_delete("a")
    await store.apply_delta_page([server_copy("a", title="edited elsewhere")], [], cursor="c2")
    view = await store.get_bookmark("a")
    assert view is not None and view["deleted"]


async def test_replaying_a_page_reports_no_change(store: LocalStore) -> None:
    page = [server_copy("a"), server_copy("b")]
    assert sorted((await store.apply_delta_page(page, [], cursor=None)).bookmarks) == ["a", "b"]
    assert (await store.apply_delta_page(page, [], cursor=None)).bookmarks == []
    assert await store.cursor() is None


def session(user_id: str) -> Session:
    return Session(accessToken="a", refreshToken="r", user=User(id=user_id))


async def test_signing_in_as_another_user_resets_local_data(store: LocalStore) -> None:
    assert not await store.store_sign_in(session("u1"), keep_queue=False)
    await store.apply_delta_page([server_copy("a")], [], cursor="c1")
    await store.queue_put("b", {"url": "https://b.example/"})

    assert not await store.store_sign_in(session("u1"), keep_queue=False)  # same user: nothing lost
    assert await store.cursor() == "c1" and await store.pending_count() == 1

    assert await store.store_sign_in(session("u2"), keep_queue=False)
    assert await store.cursor() is None
    assert await store.list_bookmarks(include_deleted=True) == []
    assert await store.pending_count() == 0
    assert await store.owner() == "u2"


async def test_link_merge_keeps_queued_writes(store: LocalStore) -> None:
    await store.store_sign_in(session("anon"), keep_queue=False)
    await store.apply_delta_page([server_copy("a")], [], cursor="c1")
    await store.queue_put("b", {"url": "https://b.example/", "title": "offline"})

    assert await store.store_sign_in(session("owner"), keep_queue=True)
    assert await store.pending_count() == 1
    views = await store.list_bookmarks()
    assert [(v["clientBookmarkId"], v["title"], v["ownerUid"]) for v in views] == [("b", "offline", "owner")]
    assert await store.cursor() is None


# -- collections, userTags, isArchived (docs/api-guide.md, section 11) ------------------------------------


def server_collection(collection_id: str, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": collection_id,
        "name": collection_id.title(),
        "parentId": None,
        "createdAt": "2030-01-01T00:00:00Z",
        "updatedAt": "2030-01-01T00:00:01Z",
    }
    record.update(fields)
    return record


async def test_collection_writes_queue_in_order_with_bookmark_writes(store: LocalStore) -> None:
    await store.queue_collection_put("reading", {"name": "Reading"})
    await store.queue_put("a", {"url": "https://a.example/", "collectionIds": ["reading"], "userTags": ["x"]})
    await store.queue_collection_put("later", {"name": "Later", "parentId": "reading"})
    await store.queue_collection_delete("later")
    ops = await store.pending_ops()
    assert [(o.kind, o.bookmark_id) for o in ops] == [
        ("collection-put", "reading"),
        ("put", "a"),
        ("collection-put", "later"),
        ("collection-delete", "later"),
    ]
    reading = await store.get_collection("reading")
    assert reading is not None and reading["name"] == "Reading" and reading["pending"] and not reading["deleted"]
    later = await store.get_collection("later")
    assert later is not None and later["deleted"] and later["parentId"] == "reading"
    assert [r["id"] for r in await store.list_collections()] == ["reading"]
    a = await store.get_bookmark("a")
    assert a is not None and a["collectionIds"] == ["reading"] and a["userTags"] == ["x"] and a["isArchived"] is False


async def test_a_collection_needs_a_name_when_new_and_keeps_it_when_moved(store: LocalStore) -> None:
    with pytest.raises(ValueError, match="name is required"):
        await store.queue_collection_put("new", {"parentId": None})
    await store.apply_delta_page([], [], cursor="c1", collections=[server_collection("a"), server_collection("b")])
    op = await store.queue_collection_put("b", {"parentId": "a"})
    assert op.payload == {"fields": {"parentId": "a", "name": "B"}}  # the name is resent, as a bookmark's url
    with pytest.raises(ValueError, match="into itself"):
        await store.queue_collection_put("a", {"parentId": "b"})  # b is now inside a (locally)
    with pytest.raises(ValueError, match="does not exist"):
        await store.queue_collection_put("c", {"name": "C", "parentId": "unknown"})
    assert await store.pending_count() == 1


async def test_delta_keeps_a_pending_rename_and_applies_other_collection_changes(store: LocalStore) -> None:
    await store.apply_delta_page([], [], cursor="c1", collections=[server_collection("a"), server_collection("b")])
    await store.queue_collection_put("a", {"name": "Mine"})

    changes = await store.apply_delta_page(
        [server_copy("x", collectionIds=["a"])],
        [],
        cursor="c2",
        collections=[server_collection("a", name="Theirs", parentId="b", updatedAt="2030-01-01T00:00:09Z")],
    )
    a = await store.get_collection("a")
    assert a is not None and a["name"] == "Mine" and a["parentId"] == "b" and a["pending"]
    assert changes.collections == ["a"] and changes.bookmarks == ["x"]

    op = await store.next_op()
    assert op is not None
    await store.complete_op(op, server_collection("a", name="Mine", parentId="b", updatedAt="2030-01-01T00:00:10Z"))
    a = await store.get_collection("a")
    assert a is not None and a["name"] == "Mine" and not a["pending"] and a["updatedAt"] == "2030-01-01T00:00:10Z"

    gone = await store.apply_delta_page(
        [],
        [],
        cursor="c3",
        collection_tombstones=[{"id": "b", "deletedAt": "d"}, {"id": "never-seen", "deletedAt": "d"}],
    )
    assert gone.collections == ["b"]
    assert await store.get_collection("never-seen") is None
    assert [r["id"] for r in await store.list_collections()] == ["a"]


async def test_collection_tombstone_against_queued_writes(store: LocalStore) -> None:
    await store.apply_delta_page([], [], cursor="c1", collections=[server_collection("a"), server_collection("b")])
    await store.queue_collection_put("a", {"name": "Renamed offline"})  # a PUT creates it again
    await store.queue_collection_delete("b")
    await store.apply_delta_page(
        [], [], cursor="c2", collection_tombstones=[{"id": "a", "deletedAt": "d"}, {"id": "b", "deletedAt": "d2"}]
    )
    a, b = await store.get_collection("a"), await store.get_collection("b")
    assert a is not None and not a["deleted"] and a["name"] == "Renamed offline"
    assert b is not None and b["deleted"]


async def test_deleting_an_unknown_collection_leaves_no_trace(store: LocalStore) -> None:
    op = await store.queue_collection_delete("never-seen")
    assert await store.get_collection("never-seen") is None
    await store.complete_op(op, None)
    assert await store.list_collections(include_deleted=True) == []


async def test_rejected_collection_write_is_rolled_back(store: LocalStore) -> None:
    await store.apply_delta_page([], [], cursor="c1", collections=[server_collection("a")])
    rename = await store.queue_collection_put("a", {"name": "New"})
    created = await store.queue_collection_put("z", {"name": "Z"})
    await store.reject_op(rename, status=400, code="invalid-request", message="no")
    await store.reject_op(created, status=400, code="invalid-request", message="too many collections")
    a = await store.get_collection("a")
    assert a is not None and a["name"] == "A" and not a["pending"]
    assert await store.get_collection("z") is None
    assert [(r.kind, r.bookmark_id) for r in await store.rejected_ops()] == [
        ("collection-put", "a"),
        ("collection-put", "z"),
    ]


async def test_a_bookmark_and_a_collection_may_share_an_id(store: LocalStore) -> None:
    await store.apply_delta_page([server_copy("same")], [], cursor="c1", collections=[server_collection("same")])
    await store.queue_collection_put("same", {"name": "Renamed"})
    bookmark = await store.get_bookmark("same")
    collection = await store.get_collection("same")
    assert bookmark is not None and not bookmark["pending"] and bookmark["url"] == "https://example.com/same"
    assert collection is not None and collection["pending"] and collection["name"] == "Renamed"
    # A bookmark delta does not replay the collection's queued op onto the bookmark (nor the reverse).
    await store.apply_delta_page([server_copy("same", title="T")], [], cursor="c2")
    bookmark = await store.get_bookmark("same")
    assert bookmark is not None and bookmark["title"] == "T" and "name" not in bookmark


async def test_switching_users_resets_collections_and_a_merge_keeps_queued_ones(store: LocalStore) -> None:
    await store.store_sign_in(session("anon"), keep_queue=False)
    await store.apply_delta_page([], [], cursor="c1", collections=[server_collection("synced")])
    await store.queue_collection_put("offline", {"name": "Offline"})

    assert await store.store_sign_in(session("owner"), keep_queue=True)
    assert [r["id"] for r in await store.list_collections(include_deleted=True)] == ["offline"]
    assert await store.store_sign_in(session("someone-else"), keep_queue=False)
    assert await store.list_collections(include_deleted=True) == []

    await store.queue_collection_put("c", {"name": "C"})
    await store.clear_all()
    assert await store.list_collections(include_deleted=True) == [] and await store.pending_count() == 0


@pytest.mark.parametrize("old_version", ["1", "2"])  # before collections; before highlights
async def test_a_profile_of_an_older_schema_resyncs_from_scratch(tmp_path: Path, old_version: str) -> None:
    import aiosqlite

    path = tmp_path / "old.sqlite"
    store = await LocalStore.open(path)
    await store.apply_delta_page([server_copy("a")], [], cursor="c9")
    await store.queue_put("b", {"url": "https://b.example/"})
    await store.close()
    async with aiosqlite.connect(path) as db:  # what an older client left behind
        await db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (old_version,))
        await db.commit()

    upgraded = await LocalStore.open(path)
    try:
        # Its cursor is past records it never stored (collections, highlights): the next sync starts over.
        assert await upgraded.cursor() is None
        assert await upgraded.pending_count() == 1 and await upgraded.get_bookmark("a") is not None
        await upgraded.set_cursor("c10")
    finally:
        await upgraded.close()
    again = await LocalStore.open(path)
    try:
        assert await again.cursor() == "c10"  # upgraded once, not on every open
    finally:
        await again.close()


@pytest.mark.parametrize("steps_before_cancel", range(1, 6))
async def test_a_write_cancelled_anywhere_leaves_no_open_transaction(
    store: LocalStore, steps_before_cancel: int
) -> None:
    """A sync cancelled mid-write (``watch`` stopped, Ctrl-C) rolls back; the next write still works."""
    await store.queue_put("a", {"url": "https://a.example/"})
    task = asyncio.create_task(store.queue_put("b", {"url": "https://b.example/"}))
    for _ in range(steps_before_cancel):
        await asyncio.sleep(0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await store.queue_put("c", {"url": "https://c.example/"})
    ids = [op.bookmark_id for op in await store.pending_ops()]
    assert ids[0] == "a" and ids[-1] == "c" and set(ids) <= {"a", "b", "c"}
