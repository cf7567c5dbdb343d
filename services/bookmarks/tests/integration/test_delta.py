"""Delta sync: order, paging, cursors, tombstones, and the never-skip guarantee under concurrency."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import random
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from bookmarks.api import wire
from bookmarks.domain.collections import Collection
from bookmarks.domain.fields import Declared
from bookmarks.domain.model import BOOKMARK_FIELDS, Bookmark
from bookmarks.highlights import store as highlights_store
from bookmarks.highlights.rules import Highlight
from bookmarks.store import repository


async def delta(http: httpx.AsyncClient, user: Any, **params: Any) -> httpx.Response:
    return await http.get("/v1/bookmarks/delta", params=params, headers=user.headers)


async def test_initial_sync_of_empty_stream(http: httpx.AsyncClient, user: Any) -> None:
    response = await delta(http, user)
    assert response.status_code == 200
    assert response.json() == {
        "data": {
            "cursor": None,
            "nextCursor": None,
            "upserts": [],
            "tombstones": [],
            "collections": [],
            "collectionTombstones": [],
            "highlights": [],
            "highlightTombstones": [],
        }
    }


async def test_pages_are_ordered_and_interleave_tombstones(http: httpx.AsyncClient, user: Any) -> None:
    for i in range(5):
        await http.put(f"/v1/bookmarks/p{i}", json={"url": f"https://p{i}.example/"}, headers=user.headers)
    await http.delete("/v1/bookmarks/p1", headers=user.headers)
    await http.put("/v1/bookmarks/p0", json={"url": "https://p0.example/", "title": "again"}, headers=user.headers)

    seen: list[tuple[str, str, str]] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        data = (await delta(http, user, **params)).json()["data"]
        assert data["cursor"] == cursor
        assert len(data["upserts"]) + len(data["tombstones"]) <= 2
        page = [("u", r["clientBookmarkId"], r["updatedAt"]) for r in data["upserts"]]
        page += [("t", t["clientBookmarkId"], t["deletedAt"]) for t in data["tombstones"]]
        seen += sorted(page, key=lambda x: (x[2], x[1]))
        pages += 1
        if data["nextCursor"] is None:
            break
        cursor = data["nextCursor"]
    assert [s[1] for s in seen] == ["p2", "p3", "p4", "p1", "p0"]
    assert seen[3][0] == "t"
    positions = [(s[2], s[1]) for s in seen]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert pages == 3


async def test_same_cursor_same_page_and_resume_replays_last_page(http: httpx.AsyncClient, user: Any) -> None:
    for i in range(3):
        await http.put(f"/v1/bookmarks/s{i}", json={"url": f"https://s{i}.example/"}, headers=user.headers)
    first = (await delta(http, user, limit=2)).json()["data"]
    cursor = first["nextCursor"]
    a = (await delta(http, user, limit=2, cursor=cursor)).json()["data"]
    b = (await delta(http, user, limit=2, cursor=cursor)).json()["data"]
    assert a == b and a["nextCursor"] is None
    assert [r["clientBookmarkId"] for r in a["upserts"]] == ["s2"]
    # Resume from the last request's cursor: replays s2 and then anything newer.
    await http.put("/v1/bookmarks/s3", json={"url": "https://s3.example/"}, headers=user.headers)
    c = (await delta(http, user, limit=10, cursor=cursor)).json()["data"]
    assert [r["clientBookmarkId"] for r in c["upserts"]] == ["s2", "s3"]


async def test_tampered_truncated_and_foreign_cursors_are_rejected(http: httpx.AsyncClient, make_user: Any) -> None:
    alice, bob = make_user(), make_user()
    for i in range(2):
        await http.put(f"/v1/bookmarks/t{i}", json={"url": f"https://t{i}.example/"}, headers=alice.headers)
    cursor = (await delta(http, alice, limit=1)).json()["data"]["nextCursor"]
    body, mac = cursor.split(".")
    decoded = base64.urlsafe_b64decode(body + "==").decode()
    forged_body = base64.urlsafe_b64encode(decoded.replace("t0", "t1").encode()).rstrip(b"=").decode()
    for bad in [cursor[:-3], cursor + "A", f"{forged_body}.{mac}", "garbage", "a.b.c", "...."]:
        response = await delta(http, alice, cursor=bad)
        assert response.status_code == 400, bad
        assert response.json()["code"] == "invalid-cursor"
    response = await delta(http, bob, cursor=cursor)
    assert response.status_code == 400 and response.json()["code"] == "invalid-cursor"


async def test_a_write_blocked_behind_an_open_transaction_is_not_skipped(
    http: httpx.AsyncClient, user: Any, bookmarks_app: Any, sync: Any
) -> None:
    """The race a naive ORDER BY updated_at loses: an early-stamped write committing after a reader passed.

    A transaction takes a position and stays open; a concurrent PUT for the same user must queue behind
    it and get a later position; a reader in between sees neither, and its cursor still yields both.
    """
    await http.put("/v1/bookmarks/base", json={"url": "https://base.example/"}, headers=user.headers)
    _, _, cursor = await sync(user)
    _, _, cursor_before = await sync(user, cursor)

    sessions = bookmarks_app.state.sessions
    async with sessions() as session:
        await session.begin()
        position, _ = await repository.allocate_positions(session, user.id)
        await repository.put_bookmark(
            session,
            Bookmark(
                owner_uid=user.id,
                client_bookmark_id="slow",
                url="https://slow.example/",
                normalized_url="https://slow.example/",
                domain="slow.example",
                created_at=position,
                updated_at=position,
            ),
        )
        fast = asyncio.create_task(
            http.put("/v1/bookmarks/fast", json={"url": "https://fast.example/"}, headers=user.headers)
        )
        await asyncio.sleep(0.3)
        assert not fast.done()  # serialized behind the open transaction
        live, _, _ = await sync(user, cursor_before)
        assert "slow" not in live and "fast" not in live
        await session.commit()
    assert (await fast).status_code == 200
    live, _, _ = await sync(user, cursor_before)
    assert {"slow", "fast"} <= set(live)
    assert live["slow"]["updatedAt"] < live["fast"]["updatedAt"]


async def test_concurrent_writers_and_cursor_following_readers_converge(
    http: httpx.AsyncClient, user: Any, bookmarks_app: Any, sync: Any
) -> None:
    """Stress: 6 writers race puts/deletes on 25 ids while 3 readers follow cursors; every reader ends
    with exactly the server's final state (no skipped record, no lost delete)."""
    ids = [f"k{i}" for i in range(25)]
    writers_done = asyncio.Event()

    async def writer(seed: int) -> None:
        rng = random.Random(seed)
        for n in range(40):
            bid = rng.choice(ids)
            if rng.random() < 0.3:
                response = await http.delete(f"/v1/bookmarks/{bid}", headers=user.headers)
                assert response.status_code == 204
            else:
                body = {"url": f"https://{bid}.example/", "title": f"w{seed}-{n}", "isFavorite": rng.random() < 0.5}
                response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
                assert response.status_code == 200

    async def reader() -> tuple[dict[str, Any], set[str]]:
        live: dict[str, Any] = {}
        dead: set[str] = set()
        cursor: str | None = None
        while True:
            finishing = writers_done.is_set()
            page_live, page_dead, last_cursor = await sync(user, cursor, limit=7)
            for bid, record in page_live.items():
                live[bid] = record
                dead.discard(bid)
            for bid in page_dead:
                live.pop(bid, None)
                dead.add(bid)
            cursor = last_cursor
            if finishing:
                return live, dead
            await asyncio.sleep(0)

    readers = [asyncio.create_task(reader()) for _ in range(3)]
    await asyncio.gather(*(writer(seed) for seed in range(6)))
    writers_done.set()
    results = await asyncio.gather(*readers)

    async with bookmarks_app.state.sessions() as session:
        rows = (
            await session.execute(
                text("SELECT client_bookmark_id, title, deleted_at, updated_at FROM bookmarks WHERE owner_uid = :o"),
                {"o": user.id},
            )
        ).all()
    server_live = {r.client_bookmark_id: r.title for r in rows if r.deleted_at is None}
    server_dead = {r.client_bookmark_id for r in rows if r.deleted_at is not None}
    for live, dead in results:
        assert {bid: rec["title"] for bid, rec in live.items()} == server_live
        assert dead == server_dead


async def test_concurrent_bookmark_and_collection_writers_and_readers_converge(
    http: httpx.AsyncClient, user: Any, bookmarks_app: Any, sync_lib: Any
) -> None:
    """Stress with collections (docs/api-guide.md, section 11): writers race bookmark puts/deletes that file into
    collections, and collection puts/moves/deletes (which move children and strip ids from bookmarks,
    many records per commit), while readers follow cursors with small pages. Every reader ends with
    exactly the server's state of bookmarks and collections."""
    bids = [f"k{i}" for i in range(15)]
    cids = [f"c{i}" for i in range(8)]
    writers_done = asyncio.Event()

    async def writer(seed: int) -> None:
        rng = random.Random(seed)
        for n in range(30):
            roll = rng.random()
            if roll < 0.35:
                body = {
                    "url": f"https://{n}.example/",
                    "title": f"w{seed}-{n}",
                    "collectionIds": rng.sample(cids, rng.randint(0, 3)),
                    "userTags": [f"t{seed}"],
                }
                response = await http.put(f"/v1/bookmarks/{rng.choice(bids)}", json=body, headers=user.headers)
                assert response.status_code == 200, response.text
            elif roll < 0.5:
                response = await http.delete(f"/v1/bookmarks/{rng.choice(bids)}", headers=user.headers)
                assert response.status_code == 204
            elif roll < 0.85:
                body = {"name": f"n{seed}-{n}", "parentId": rng.choice([None, *cids])}
                response = await http.put(f"/v1/collections/{rng.choice(cids)}", json=body, headers=user.headers)
                assert response.status_code in (200, 400), response.text  # 400: unknown parent or a cycle
            else:
                response = await http.delete(f"/v1/collections/{rng.choice(cids)}", headers=user.headers)
                assert response.status_code == 204

    async def reader() -> Any:
        library = None
        while True:
            finishing = writers_done.is_set()
            library = await sync_lib(user, library, limit=5)
            if finishing:
                return library
            await asyncio.sleep(0)

    readers = [asyncio.create_task(reader()) for _ in range(3)]
    await asyncio.gather(*(writer(seed) for seed in range(5)))
    writers_done.set()
    results = await asyncio.gather(*readers)

    async with bookmarks_app.state.sessions() as session:
        stored_bookmarks = await repository.all_for_owner(session, user.id)
        stored_collections = await repository.all_collections_for_owner(session, user.id)
    server_bookmarks = {
        b.client_bookmark_id: (b.title, list(b.collection_ids), list(b.user_tags))
        for b in stored_bookmarks
        if not b.is_deleted
    }
    server_collections = {c.collection_id: (c.name, c.parent_id) for c in stored_collections if not c.is_deleted}
    assert server_collections  # the run did exercise collections
    for library in results:
        assert {
            bid: (r["title"], r["collectionIds"], r["userTags"]) for bid, r in library.bookmarks.items()
        } == server_bookmarks
        assert set(library.bookmark_tombstones) == {b.client_bookmark_id for b in stored_bookmarks if b.is_deleted}
        assert {cid: (r["name"], r["parentId"]) for cid, r in library.collections.items()} == server_collections
        assert set(library.collection_tombstones) == {c.collection_id for c in stored_collections if c.is_deleted}


ODD_TEXT = 'quote " backslash \\ newline \n tab \t ctrl \x01 sep \u2028 emoji 😀 ünïcode </script>'


def _value_of(declared: Declared, position: datetime) -> Any:
    """A value of a declared field's kind that is not its default (nor null, nor empty)."""
    n = len(declared.name)
    values: dict[str, Any] = {
        "timestamp": position - timedelta(days=n, microseconds=n * 7),
        "date": date(2026, 1 + n % 12, 1 + n % 28),
        "strings": (ODD_TEXT, f"{declared.name}-2"),
        "bool": True,
        "int": -(n * 1_000_003),
        "decimal": Decimal(f"{n}.25"),
        "text": f"{declared.name}: {ODD_TEXT}",
    }
    if declared.type.enum is not None:
        return next(member for member in reversed(declared.type.enum) if member != declared.default)
    return values[declared.type.kind]


def _every_field_set(owner: Any, position: Any) -> Bookmark:
    """A bookmark with no field at its default, so every wire field (every declared one: a new field is
    covered without an edit here) is compared with a real value."""
    values = {f.name: _value_of(f, position) for f in BOOKMARK_FIELDS if f.name not in ("owner_uid", "deleted_at")}
    values["updated_at"] = position
    return Bookmark(owner_uid=owner, **values)


@pytest.mark.parametrize("is_pro", [False, True])
async def test_delta_documents_rendered_by_postgresql_equal_the_python_rendering(
    http: httpx.AsyncClient, make_user: Any, bookmarks_app: Any, is_pro: bool
) -> None:
    """Delta pages are rendered in SQL, single records in Python, from one plan per wire model
    (api/wire.py): the two must agree on every field, for live records and tombstones of both kinds,
    on the Pro gate, and on text that needs escaping; in delta pages and in the JSON export."""
    user = make_user()
    async with bookmarks_app.state.sessions() as session, session.begin():
        await repository.set_pro(session, user.id, is_pro)
        position, _ = await repository.allocate_positions(session, user.id, 8)
        full = _every_field_set(user.id, position)
        bare = Bookmark(
            user.id,
            "bare",
            "https://b.example/",
            "https://b.example/",
            "b.example",
            created_at=position,
            updated_at=position + timedelta(microseconds=1),
        )
        dead = dataclasses.replace(
            bare,
            client_bookmark_id="dead",
            updated_at=position + timedelta(microseconds=2),
            deleted_at=position + timedelta(microseconds=2),
        )
        for record in (full, bare, dead):
            await repository.put_bookmark(session, record)
        folder = Collection(user.id, "c1", ODD_TEXT, position, position + timedelta(microseconds=3), parent_id="c0")
        gone = Collection(
            user.id,
            "c2",
            "x",
            position,
            position + timedelta(microseconds=4),
            deleted_at=position + timedelta(microseconds=4),
        )
        for collection in (folder, gone):
            await repository.put_collection(session, collection)
        mark = Highlight(
            user.id, "h1", full.client_bookmark_id, ODD_TEXT, ODD_TEXT[:64], "", 3, 9, "pink", ODD_TEXT, "fuzzy",
            created_at=position, updated_at=position + timedelta(microseconds=5),
        )  # fmt: skip
        unmarked = dataclasses.replace(
            mark, highlight_id="h2", quote_start=None, quote_end=None, anchor=None,
            updated_at=position + timedelta(microseconds=6), deleted_at=position + timedelta(microseconds=6),
        )  # fmt: skip
        await highlights_store.put(session, [mark, unmarked])

    data = (await delta(http, user, limit=10)).json()["data"]

    expected_full = wire.bookmark(full, is_pro=is_pro)
    assert all(v not in (None, [], False) for k, v in expected_full.items() if k != "saveWhy")
    assert (expected_full["saveWhy"] is not None) is is_pro
    assert data["upserts"] == [expected_full, wire.bookmark(bare, is_pro=is_pro)]
    assert data["tombstones"] == [wire.bookmark_tombstone(dead)]
    assert data["collections"] == [wire.collection(folder)]
    assert data["collectionTombstones"] == [wire.collection_tombstone(gone)]
    assert data["highlights"] == [wire.highlight(mark)]
    assert data["highlightTombstones"] == [wire.highlight_tombstone(unmarked)]

    # The JSON export renders with the same plans: each live bookmark without ownerUid, with its highlights.
    response = await http.get("/v1/exports", params={"format": "json"}, headers=user.headers)
    exported = {b["clientBookmarkId"]: b for b in response.json()["bookmarks"]}
    portable = {r.client_bookmark_id: wire.bookmark(r, is_pro=is_pro) for r in (full, bare)}
    for document in portable.values():
        del document["ownerUid"]
    assert exported == {
        full.client_bookmark_id: portable[full.client_bookmark_id] | {"highlights": [wire.highlight(mark)]},
        "bare": portable["bare"] | {"highlights": []},
    }
