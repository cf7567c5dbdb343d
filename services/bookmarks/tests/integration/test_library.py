"""The library model (docs/api-guide.md, section 11): user tags, archive state, collections in the delta stream."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from sqlalchemy import func, select

from bookmarks.domain.collections import Collection
from bookmarks.store import repository
from bookmarks.store.tables import collections as collections_table
from common.events import (
    BookmarkSaved,
    CollectionChanged,
    EnrichmentCompleted,
    EnrichmentResult,
    UserDeleted,
    UserMerged,
    parse_event,
)
from devstack.testing import eventually

COLLECTION_FIELDS = {"id", "name", "parentId", "createdAt", "updatedAt"}


async def put_bm(http: httpx.AsyncClient, user: Any, bid: str, body: dict[str, Any]) -> httpx.Response:
    return await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)


async def put_col(http: httpx.AsyncClient, user: Any, cid: str, body: dict[str, Any]) -> httpx.Response:
    return await http.put(f"/v1/collections/{cid}", json=body, headers=user.headers)


async def del_col(http: httpx.AsyncClient, user: Any, cid: str) -> httpx.Response:
    return await http.delete(f"/v1/collections/{cid}", headers=user.headers)


# --- E1 -------------------------------------------------------------------------------------------------


async def test_user_tags_and_archive_state_round_trip_and_merge(
    sync_lib: Any, http: httpx.AsyncClient, user: Any
) -> None:
    body = {"url": "https://t.example/", "userTags": [" Rust ", "go", "RUST", "Go ", "web dev"], "isArchived": True}
    data = (await put_bm(http, user, "t1", body)).json()["data"]
    assert data["userTags"] == ["Rust", "go", "web dev"] and data["isArchived"] is True
    # Absent fields keep their values; present ones overwrite.
    data = (await put_bm(http, user, "t1", {"url": "https://t.example/", "title": "T"})).json()["data"]
    assert data["userTags"] == ["Rust", "go", "web dev"] and data["isArchived"] is True
    data = (await put_bm(http, user, "t1", {"url": "https://t.example/", "userTags": [], "isArchived": False})).json()[
        "data"
    ]
    assert data["userTags"] == [] and data["isArchived"] is False
    library = await sync_lib(user)
    assert library.bookmarks["t1"]["userTags"] == [] and library.bookmarks["t1"]["isArchived"] is False


async def test_a_redundant_tag_write_takes_no_new_position(http: httpx.AsyncClient, user: Any) -> None:
    body = {"url": "https://r.example/", "userTags": ["a", "b"]}
    first = (await put_bm(http, user, "r1", body)).json()["data"]
    again = (await put_bm(http, user, "r1", body | {"userTags": ["a", "A", "b "]})).json()["data"]
    assert again["updatedAt"] == first["updatedAt"]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"userTags": [""]}, "userTags"),
        ({"userTags": ["   "]}, "userTags"),
        ({"userTags": [3]}, "userTags"),
        ({"userTags": ["x" * 65]}, "userTags"),
        ({"userTags": ["a\nb"]}, "userTags"),
        ({"userTags": ["a\u0000b"]}, "userTags"),
        ({"userTags": [f"t{i}" for i in range(51)]}, "userTags"),
        ({"userTags": "a,b"}, "userTags"),
        ({"userTags": None}, "userTags"),
        ({"isArchived": "true"}, "isArchived"),
        ({"isArchived": 1}, "isArchived"),
        ({"isArchived": None}, "isArchived"),
    ],
)
async def test_bad_user_tags_and_archive_values_are_refused(
    sync_lib: Any, http: httpx.AsyncClient, user: Any, extra: dict[str, Any], field: str
) -> None:
    response = await put_bm(http, user, "bad1", {"url": "https://bad.example/"} | extra)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid-request" and field in response.json()["message"]
    library = await sync_lib(user)
    assert not library.bookmarks and not library.bookmark_tombstones


async def test_enrichment_never_touches_user_tags_or_archive_state(
    sync_lib: Any, http: httpx.AsyncClient, user: Any, publish: Any
) -> None:
    url = "https://enr.example/"
    await put_bm(http, user, "en", {"url": url, "userTags": ["mine"], "isArchived": True, "title": "Mine"})
    result = EnrichmentResult(normalizedUrl=url, domain="enr.example", title="", summary="S", tags=["server"])
    await publish(EnrichmentCompleted(userId=user.id, clientBookmarkId="en", normalizedUrl=url, result=result))

    async def applied() -> Any:
        record = (await sync_lib(user)).bookmarks["en"]
        return record if record["enrichmentStatus"] == "completed" else None

    record = await eventually(applied)
    assert record["tags"] == ["server"] and record["userTags"] == ["mine"] and record["isArchived"] is True
    assert record["title"] == "Mine"  # an empty server title never erases the user's


# --- E2: collections ------------------------------------------------------------------------------------


async def test_collection_create_merge_and_idempotency(sync_lib: Any, http: httpx.AsyncClient, user: Any) -> None:
    response = await put_col(http, user, "top", {"name": "  Reading  "})
    assert response.status_code == 200
    top = response.json()["data"]
    assert set(top) == COLLECTION_FIELDS
    assert top["id"] == "top" and top["name"] == "Reading" and top["parentId"] is None
    assert top["createdAt"] == top["updatedAt"] and top["updatedAt"].endswith("Z")
    again = (await put_col(http, user, "top", {"name": "Reading"})).json()["data"]
    assert again == top  # idempotent: no new position
    child = (await put_col(http, user, "kid", {"name": "Kid", "parentId": "top"})).json()["data"]
    assert child["parentId"] == "top"
    renamed = (await put_col(http, user, "kid", {"name": "Renamed"})).json()["data"]
    assert renamed["parentId"] == "top" and renamed["updatedAt"] > child["updatedAt"]  # absent parentId keeps
    moved = (await put_col(http, user, "kid", {"parentId": None})).json()["data"]
    assert moved["parentId"] is None and moved["name"] == "Renamed"  # absent name keeps
    library = await sync_lib(user)
    assert library.collections == {"top": top, "kid": moved}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 201},
        {"name": 5},
        {"name": "a\u0000"},
        {"name": "A", "parentId": "ghost"},
        {"name": "A", "parentId": "bad id!"},
        {"name": "A", "parentId": 7},
    ],
)
async def test_bad_collection_writes_are_refused(
    sync_lib: Any, http: httpx.AsyncClient, user: Any, body: dict[str, Any]
) -> None:
    response = await put_col(http, user, "c1", body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid-request"
    assert not (await sync_lib(user)).collections


@pytest.mark.parametrize("cid", ["bad id", "a" * 129, "x.y", "%00"])
async def test_collection_ids_in_paths_follow_the_pattern(http: httpx.AsyncClient, user: Any, cid: str) -> None:
    for response in (await put_col(http, user, cid, {"name": "A"}), await del_col(http, user, cid)):
        assert response.status_code == 400 and response.json()["code"] == "invalid-request"


async def test_deleted_parents_cycles_and_depth_are_refused(sync_lib: Any, http: httpx.AsyncClient, user: Any) -> None:
    await put_col(http, user, "gone", {"name": "Gone"})
    assert (await del_col(http, user, "gone")).status_code == 204
    assert (await put_col(http, user, "x", {"name": "X", "parentId": "gone"})).status_code == 400
    parent = None
    for level in range(1, 11):
        response = await put_col(http, user, f"l{level}", {"name": f"L{level}", "parentId": parent})
        assert response.status_code == 200, (level, response.text)
        parent = f"l{level}"
    eleventh = await put_col(http, user, "l11", {"name": "L11", "parentId": "l10"})
    assert eleventh.status_code == 400 and "10" in eleventh.json()["message"]
    cycle = await put_col(http, user, "l2", {"parentId": "l5"})
    assert cycle.status_code == 400 and "cycle" in cycle.json()["message"]
    assert (await put_col(http, user, "l1", {"parentId": "l1"})).status_code == 400
    # A move that would make the moved subtree too deep: s1 <- s2 under l9 makes 11 levels.
    await put_col(http, user, "s1", {"name": "S1"})
    await put_col(http, user, "s2", {"name": "S2", "parentId": "s1"})
    assert (await put_col(http, user, "s1", {"parentId": "l9"})).status_code == 400
    assert (await put_col(http, user, "s1", {"parentId": "l8"})).status_code == 200
    library = await sync_lib(user)
    assert library.collections["l2"]["parentId"] == "l1" and "l11" not in library.collections


async def test_more_than_1000_live_collections_are_refused(
    http: httpx.AsyncClient, user: Any, bookmarks_app: Any
) -> None:
    async with bookmarks_app.state.sessions() as session, session.begin():
        first, _ = await repository.allocate_positions(session, user.id, 1000)
        for i in range(1000):
            at = first + i * repository.ONE_MICROSECOND
            await repository.put_collection(session, Collection(user.id, f"k{i}", f"K{i}", at, at))
    response = await put_col(http, user, "one-more", {"name": "One more"})
    assert response.status_code == 400 and response.json()["code"] == "invalid-request"
    assert (await put_col(http, user, "k7", {"name": "Renamed"})).status_code == 200
    assert (await del_col(http, user, "k8")).status_code == 204
    assert (await put_col(http, user, "one-more", {"name": "One more"})).status_code == 200


async def test_delete_moves_children_up_and_strips_the_id_from_bookmarks(
    sync_lib: Any, http: httpx.AsyncClient, user: Any
) -> None:
    await put_col(http, user, "root", {"name": "Root"})
    await put_col(http, user, "mid", {"name": "Mid", "parentId": "root"})
    await put_col(http, user, "leaf1", {"name": "Leaf 1", "parentId": "mid"})
    await put_col(http, user, "leaf2", {"name": "Leaf 2", "parentId": "mid"})
    await put_bm(http, user, "in", {"url": "https://in.example/", "collectionIds": ["mid", "other"]})
    await put_bm(http, user, "out", {"url": "https://out.example/", "collectionIds": ["other"]})
    device = await sync_lib(user)
    before = {"in": device.bookmarks["in"]["updatedAt"], "out": device.bookmarks["out"]["updatedAt"]}

    assert (await del_col(http, user, "mid")).status_code == 204
    assert (await del_col(http, user, "mid")).status_code == 204  # idempotent
    # Visible when the DELETE returns, and reaching a device that syncs on from its cursor.
    device = await sync_lib(user, device)
    assert device.collections["leaf1"]["parentId"] == "root" and device.collections["leaf2"]["parentId"] == "root"
    assert "mid" not in device.collections and "mid" in device.collection_tombstones
    assert device.bookmarks["in"]["collectionIds"] == ["other"]
    assert device.bookmarks["out"]["collectionIds"] == ["other"]
    # The changed records moved in the stream (the untouched bookmark did not), so they follow any cursor.
    assert device.bookmarks["in"]["updatedAt"] > before["in"] and device.bookmarks["out"]["updatedAt"] == before["out"]
    assert device.collections["root"]["updatedAt"] < device.collection_tombstones["mid"]
    # A PUT creates a deleted collection again; unknown ids on bookmarks are kept as given.
    revived = await put_col(http, user, "mid", {"name": "Back"})
    assert revived.status_code == 200 and revived.json()["data"]["parentId"] is None
    kept = await put_bm(http, user, "early", {"url": "https://e.example/", "collectionIds": ["not-yet"]})
    assert kept.json()["data"]["collectionIds"] == ["not-yet"]
    assert (await del_col(http, user, "never-existed")).status_code == 204


async def test_collections_share_the_stream_and_limit_counts_every_record(http: httpx.AsyncClient, user: Any) -> None:
    await put_bm(http, user, "b1", {"url": "https://b1.example/"})
    await put_col(http, user, "c1", {"name": "C1"})
    await put_bm(http, user, "b2", {"url": "https://b2.example/"})
    await put_col(http, user, "c2", {"name": "C2"})
    await del_col(http, user, "c1")
    await http.delete("/v1/bookmarks/b1", headers=user.headers)
    order: list[str] = []
    cursor = None
    while True:
        params = {"limit": "2"} | ({"cursor": cursor} if cursor else {})
        data = (await http.get("/v1/bookmarks/delta", params=params, headers=user.headers)).json()["data"]
        assert {"upserts", "tombstones", "collections", "collectionTombstones"} <= set(data)
        page = [(r["updatedAt"], "b:" + r["clientBookmarkId"]) for r in data["upserts"]]
        page += [(t["deletedAt"], "-b:" + t["clientBookmarkId"]) for t in data["tombstones"]]
        page += [(r["updatedAt"], "c:" + r["id"]) for r in data["collections"]]
        page += [(t["deletedAt"], "-c:" + t["id"]) for t in data["collectionTombstones"]]
        assert len(page) <= 2
        order += [name for _, name in sorted(page)]
        if data["nextCursor"] is None:
            break
        cursor = data["nextCursor"]
    assert order == ["b:b2", "c:c2", "-c:c1", "-b:b1"]


async def test_account_deletion_and_merge_cover_collections(
    sync_lib: Any, http: httpx.AsyncClient, make_user: Any, publish: Any, bookmarks_app: Any
) -> None:
    owner, anon, doomed = make_user(), make_user(), make_user()
    await put_col(http, anon, "shared", {"name": "anon-older"})
    await put_col(http, owner, "shared", {"name": "owner-newer"})
    await put_col(http, owner, "both", {"name": "owner-older"})
    await put_col(http, anon, "both", {"name": "anon-newer"})
    await put_col(http, anon, "anon-only", {"name": "Anon", "parentId": "both"})
    await put_bm(
        http,
        anon,
        "tagged",
        {"url": "https://tg.example/", "userTags": ["k"], "isArchived": True, "collectionIds": ["anon-only"]},
    )
    await put_col(http, doomed, "mine", {"name": "Mine"})
    device = await sync_lib(owner)

    await publish(UserMerged(userId=owner.id, sourceUserId=anon.id))
    await publish(UserDeleted(userId=doomed.id))

    async def merged() -> Any:
        synced = await sync_lib(owner, device)
        return synced if "anon-only" in synced.collections and "tagged" in synced.bookmarks else None

    device = await eventually(merged)
    assert device.collections["shared"]["name"] == "owner-newer"
    assert device.collections["both"]["name"] == "anon-newer"
    assert device.collections["anon-only"]["parentId"] == "both"
    tagged = device.bookmarks["tagged"]
    assert tagged["userTags"] == ["k"] and tagged["isArchived"] is True and tagged["collectionIds"] == ["anon-only"]

    async def purged() -> bool:
        async with bookmarks_app.state.sessions() as session:
            count = (
                select(func.count())
                .select_from(collections_table)
                .where(collections_table.c.owner_uid.in_([doomed.id, anon.id]))
            )
            return (await session.execute(count)).scalar_one() == 0

    await eventually(purged)
    assert (await put_col(http, doomed, "late", {"name": "Late"})).status_code == 401


async def test_collections_are_per_user(sync_lib: Any, http: httpx.AsyncClient, make_user: Any) -> None:
    alice, bob = make_user(), make_user()
    await put_col(http, alice, "a1", {"name": "Alice's"})
    assert (await put_col(http, bob, "b1", {"name": "B", "parentId": "a1"})).status_code == 400
    assert not (await sync_lib(bob)).collections
    assert uuid.UUID(str(bob.id))


async def test_collection_changes_are_published_for_nudges(http: httpx.AsyncClient, user: Any, infra: Any) -> None:
    consumer = AIOKafkaConsumer(
        "collection.changed",
        "bookmark.saved",
        bootstrap_servers=infra.kafka_bootstrap,
        group_id=None,  # no group: joining one costs a rebalance of seconds; events are told apart by user
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        await put_col(http, user, "ev", {"name": "Ev"})
        await put_bm(http, user, "evb", {"url": "https://ev.example/", "collectionIds": ["ev"]})
        await del_col(http, user, "ev")
        mine: list[Any] = []

        async def collect() -> bool:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                mine.extend(e for r in records if (e := parse_event(r.value)).userId == user.id)
            return len(mine) >= 4

        await eventually(collect)
        # Two topics: ordered within each, not across them.
        created, deleted = [e for e in mine if isinstance(e, CollectionChanged)]
        filed, stripped = [e for e in mine if isinstance(e, BookmarkSaved)]
        assert created.collectionId == "ev" and not created.deleted and deleted.deleted
        assert filed.created and stripped.clientBookmarkId == "evb" and not stripped.created
        assert stripped.updatedAt > deleted.updatedAt  # the stripped bookmark moved in the stream
    finally:
        await consumer.stop()
