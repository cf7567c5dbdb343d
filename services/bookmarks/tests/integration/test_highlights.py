"""Highlights (docs/api-guide.md, section 16): a synced record in the delta stream, following its bookmark
through deletes, restores and merges, re-anchored whenever the page's readable text is replaced."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from sqlalchemy import select
from sqlalchemy.dialects import postgresql

from bookmarks.highlights import store as highlights_store
from bookmarks.store.tables import page_texts
from common.events import (
    EnrichmentCompleted,
    EnrichmentResult,
    HighlightChanged,
    UserDeleted,
    UserMerged,
    parse_event,
)
from devstack.testing import eventually

PAGE = (
    "Tide pools hold a world in a puddle. Anemones close when the water leaves them. "
    "Crabs hide under rocks until the tide returns and the pool fills again. "
    "Visit at low tide, step lightly, and put every stone back where you found it."
)
HIGHLIGHT_FIELDS = {
    "id", "bookmarkId", "quote", "prefix", "suffix", "start", "end", "color", "note", "anchor", "createdAt", "updatedAt",
}  # fmt: skip


async def put_bm(http: httpx.AsyncClient, user: Any, bid: str, url: str = "https://pools.example/a") -> None:
    response = await http.put(f"/v1/bookmarks/{bid}", json={"url": url}, headers=user.headers)
    assert response.status_code == 200, response.text


async def put_hl(http: httpx.AsyncClient, user: Any, hid: str, body: dict[str, Any]) -> httpx.Response:
    return await http.put(f"/v1/highlights/{hid}", json=body, headers=user.headers)


def marked(quote: str, bookmark: str = "b1", **extra: Any) -> dict[str, Any]:
    at = PAGE.index(quote)
    return {"bookmarkId": bookmark, "quote": quote, "start": at, "end": at + len(quote)} | extra


async def enrich(publish: Any, user: Any, bid: str, text: str, url: str = "https://pools.example/a") -> None:
    result = EnrichmentResult(normalizedUrl=url, domain="pools.example", title="Pools", text=text)
    event = EnrichmentCompleted(userId=user.id, clientBookmarkId=bid, normalizedUrl=url, result=result)
    await publish(event)


async def test_create_merge_and_idempotency(http: httpx.AsyncClient, user: Any, sync_lib: Any) -> None:
    await put_bm(http, user, "b1")
    body = marked("step lightly", prefix="Visit at low tide, ", suffix=", and put", note="Remember this")
    response = await put_hl(http, user, "h1", body)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert set(data) == HIGHLIGHT_FIELDS
    assert data["color"] == "yellow" and data["note"] == "Remember this" and data["anchor"] is None
    assert data["createdAt"] == data["updatedAt"]
    # The same PUT again changes nothing: same record, no new position.
    assert (await put_hl(http, user, "h1", body)).json()["data"] == data
    # Absent fields keep their value; color and note change.
    changed = (await put_hl(http, user, "h1", {"bookmarkId": "b1", "quote": "step lightly", "color": "blue"})).json()
    assert changed["data"]["color"] == "blue" and changed["data"]["note"] == "Remember this"
    assert changed["data"]["updatedAt"] > data["updatedAt"] and changed["data"]["createdAt"] == data["createdAt"]
    library = await sync_lib(user)
    assert library.highlights["h1"] == changed["data"]


async def test_immutable_fields_and_limits_are_refused_and_change_nothing(
    http: httpx.AsyncClient, user: Any, make_user: Any, sync_lib: Any
) -> None:
    await put_bm(http, user, "b1")
    await put_bm(http, user, "b2", "https://pools.example/b")
    created = (await put_hl(http, user, "h1", marked("step lightly", prefix="tide, "))).json()["data"]
    refusals = [
        ("h1", {"bookmarkId": "b2", "quote": "step lightly"}, "bookmarkId"),
        ("h1", {"bookmarkId": "b1", "quote": "step"}, "quote"),
        ("h1", {"bookmarkId": "b1", "quote": "step lightly", "prefix": "other"}, "prefix"),
        ("h2", {"bookmarkId": "nope", "quote": "x"}, "bookmarkId"),
        ("h2", {"bookmarkId": "b1", "quote": "   "}, "quote"),
        ("h2", {"bookmarkId": "b1", "quote": "x" * 5001}, "quote"),
        ("h2", {"bookmarkId": "b1", "quote": "x", "note": "n" * 10_001}, "note"),
        ("h2", {"bookmarkId": "b1", "quote": "x", "prefix": "p" * 65}, "prefix"),
        ("h2", {"bookmarkId": "b1", "quote": "x", "color": "red"}, "color"),
        ("h2", {"bookmarkId": "b1", "quote": "x", "start": 5, "end": 5}, "start"),
        ("h2", {"bookmarkId": "b1", "quote": "x", "start": 9, "end": 3}, "start"),
        ("h2", {"bookmarkId": "b1", "quote": "x", "start": -1, "end": 3}, "start"),
        ("h2", {"bookmarkId": "b1", "quote": "x", "start": 3}, "start"),
        ("h2", {"bookmarkId": "b1", "quote": "x", "start": "3", "end": 4}, "start"),
        ("bad id!", {"bookmarkId": "b1", "quote": "x"}, "highlightId"),
    ]
    for hid, body, field in refusals:
        response = await put_hl(http, user, hid, body)
        assert response.status_code == 400, (body, response.text)
        error = response.json()
        assert error["code"] == "invalid-request" and field in error["message"], (body, error)
    # Another user cannot attach a highlight to this user's bookmark, nor see or change this one.
    stranger = make_user()
    response = await put_hl(http, stranger, "h1", {"bookmarkId": "b1", "quote": "step lightly"})
    assert response.status_code == 400
    assert (await http.delete("/v1/highlights/h1", headers=stranger.headers)).status_code == 204
    library = await sync_lib(user)
    assert library.highlights == {"h1": created}
    assert (await sync_lib(stranger)).highlights == {}


async def test_per_bookmark_limit(http: httpx.AsyncClient, user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from bookmarks.highlights import rules

    monkeypatch.setattr(rules, "MAX_PER_BOOKMARK", 2)
    await put_bm(http, user, "b1")
    for hid in ("h1", "h2"):
        assert (await put_hl(http, user, hid, {"bookmarkId": "b1", "quote": hid})).status_code == 200
    refused = await put_hl(http, user, "h3", {"bookmarkId": "b1", "quote": "h3"})
    assert refused.status_code == 400 and "at most 2 highlights" in refused.json()["message"]
    # Changing one that exists is not a new one.
    assert (await put_hl(http, user, "h1", {"bookmarkId": "b1", "quote": "h1", "note": "n"})).status_code == 200


async def test_delete_is_idempotent_and_travels_as_a_tombstone(
    http: httpx.AsyncClient, user: Any, sync_lib: Any
) -> None:
    await put_bm(http, user, "b1")
    await put_hl(http, user, "h1", marked("step lightly"))
    device = await sync_lib(user)
    assert "h1" in device.highlights
    for _ in range(2):
        assert (await http.delete("/v1/highlights/h1", headers=user.headers)).status_code == 204
    assert (await http.delete("/v1/highlights/never", headers=user.headers)).status_code == 204
    device = await sync_lib(user, device)
    assert device.highlights == {} and set(device.highlight_tombstones) == {"h1"}
    # Written again after its delete: it lives again.
    again = await put_hl(http, user, "h1", marked("step lightly", color="green"))
    assert again.status_code == 200 and again.json()["data"]["color"] == "green"
    assert (await sync_lib(user, device)).highlights["h1"]["color"] == "green"


async def test_delta_pages_count_highlights_and_never_skip(http: httpx.AsyncClient, user: Any, sync_lib: Any) -> None:
    await put_bm(http, user, "b1")
    for i in range(7):
        await put_hl(http, user, f"h{i}", {"bookmarkId": "b1", "quote": f"quote {i}"})
        await put_bm(http, user, f"x{i}", f"https://pools.example/x{i}")
    paged = await sync_lib(user, limit=3)
    whole = await sync_lib(user)
    assert paged.highlights == whole.highlights and len(whole.highlights) == 7
    assert paged.bookmarks == whole.bookmarks


async def test_a_bookmark_delete_takes_its_highlights_and_a_restore_brings_them_back(
    http: httpx.AsyncClient, user: Any, sync_lib: Any
) -> None:
    await put_bm(http, user, "b1")
    await put_bm(http, user, "b2", "https://pools.example/b")
    await put_hl(http, user, "kept", marked("step lightly"))
    await put_hl(http, user, "removed", marked("the tide returns"))
    await put_hl(http, user, "other", {"bookmarkId": "b2", "quote": "elsewhere"})
    assert (await http.delete("/v1/highlights/removed", headers=user.headers)).status_code == 204
    device = await sync_lib(user)
    created = device.highlights["kept"]["createdAt"]
    assert (await http.delete("/v1/bookmarks/b1", headers=user.headers)).status_code == 204
    device = await sync_lib(user, device)
    assert set(device.highlights) == {"other"} and {"kept", "removed"} <= set(device.highlight_tombstones)
    # A highlight cannot be added to a deleted bookmark.
    assert (await put_hl(http, user, "late", {"bookmarkId": "b1", "quote": "x"})).status_code == 400
    assert (await http.post("/v1/trash/b1/restore", headers=user.headers)).status_code == 200
    device = await sync_lib(user, device)
    # The one deleted on purpose before stays deleted.
    assert set(device.highlights) == {"kept", "other"}
    assert device.highlights["kept"]["quote"] == "step lightly"
    # The delete's statement ran with the bookmark's parameters: the highlight kept its own createdAt.
    assert device.highlights["kept"]["createdAt"] == created


async def test_bulk_delete_and_its_undo_carry_the_highlights(http: httpx.AsyncClient, user: Any, sync_lib: Any) -> None:
    for i in range(3):
        await put_bm(http, user, f"b{i}", f"https://pools.example/{i}")
        await put_hl(http, user, f"h{i}", {"bookmarkId": f"b{i}", "quote": f"passage {i}"})
    device = await sync_lib(user)
    body = {"ids": ["b0", "b1"], "action": "delete"}
    done = await http.post("/v1/bookmarks/bulk", json=body, headers=user.headers)
    assert done.status_code == 200, done.text
    device = await sync_lib(user, device)
    assert set(device.highlights) == {"h2"}
    undo = await http.post(
        "/v1/bookmarks/bulk/undo", json={"undoToken": done.json()["data"]["undoToken"]}, headers=user.headers
    )
    assert undo.status_code == 200, undo.text
    device = await sync_lib(user, device)
    assert set(device.highlights) == {"h0", "h1", "h2"}


async def test_a_duplicates_merge_gives_the_kept_bookmark_every_highlight(
    http: httpx.AsyncClient, user: Any, sync_lib: Any
) -> None:
    await put_bm(http, user, "keep", "https://pools.example/a")
    await put_bm(http, user, "dup", "https://pools.example/a?utm_source=x")
    await put_hl(http, user, "h-keep", {"bookmarkId": "keep", "quote": "one"})
    await put_hl(http, user, "h-dup", {"bookmarkId": "dup", "quote": "two"})
    response = await http.post("/v1/duplicates/merge", json={"keep": "keep", "merge": ["dup"]}, headers=user.headers)
    assert response.status_code == 200, response.text
    device = await sync_lib(user)
    assert {h["id"]: h["bookmarkId"] for h in device.highlights.values()} == {"h-keep": "keep", "h-dup": "keep"}
    # Restoring the merged one undoes the merge of the bookmark; its highlight stays where it went.
    assert (await http.post("/v1/trash/dup/restore", headers=user.headers)).status_code == 200
    assert (await sync_lib(user, device)).highlights["h-dup"]["bookmarkId"] == "keep"


async def test_new_text_re_anchors_in_the_same_transaction(
    http: httpx.AsyncClient, user: Any, sync_lib: Any, publish: Any, bookmarks_app: Any
) -> None:
    await put_bm(http, user, "b1")
    await put_hl(http, user, "reworded", marked("the tide returns", prefix="rocks until ", suffix=" and the pool"))
    await put_hl(http, user, "edited", marked("hide under rocks until the tide returns"))
    await put_hl(http, user, "gone", marked("put every stone back where you found it"))
    await enrich(publish, user, "b1", PAGE)

    async def anchored() -> Any:
        found = (await sync_lib(user)).highlights
        return found if all(h["anchor"] for h in found.values()) else None

    first = await eventually(anchored)
    assert {k: (h["anchor"], h["start"]) for k, h in first.items()} == {
        "reworded": ("exact", PAGE.index("the tide returns")),
        "edited": ("exact", PAGE.index("hide under rocks")),
        "gone": ("exact", PAGE.index("put every stone")),
    }
    changed = "A new opening line. " + PAGE.replace("the tide returns", "the tide comes back").replace(
        "put every stone back where you found it", "leave things be"
    )
    device = await sync_lib(user)
    await enrich(publish, user, "b1", changed)

    async def re_anchored() -> Any:
        found = await sync_lib(user, device)
        return found.highlights if found.highlights["gone"]["anchor"] == "orphan" else None

    after = await eventually(re_anchored)
    assert after["edited"]["anchor"] == "fuzzy"
    assert changed[after["edited"]["start"] : after["edited"]["end"]].startswith("hide under rocks until the tide")
    # Three of its sixteen characters may differ at most: "returns" became "comes back".
    assert after["reworded"]["anchor"] == "orphan"
    assert after["gone"]["start"] is None and after["gone"]["quote"] == "put every stone back where you found it"
    # The text is stored whole (beyond what search indexes), in the transaction of the enrichment result.
    async with bookmarks_app.state.sessions() as session:
        stored = await session.scalar(select(page_texts.c.text).where(page_texts.c.owner_uid == user.id))
    assert stored == changed
    # A highlight made once the text is known is anchored at once.
    made = (await put_hl(http, user, "new", {"bookmarkId": "b1", "quote": "leave things be"})).json()["data"]
    assert made["anchor"] == "exact" and changed[made["start"] : made["end"]] == "leave things be"


async def test_long_pages_anchor_past_what_search_indexes(
    http: httpx.AsyncClient, user: Any, sync_lib: Any, publish: Any
) -> None:
    await put_bm(http, user, "b1")
    text = ("Filler sentence about nothing in particular. " * 2000) + "The one passage that matters."
    assert len(text.encode()) > 64 * 1024
    await put_hl(http, user, "deep", {"bookmarkId": "b1", "quote": "The one passage that matters."})
    await enrich(publish, user, "b1", text)

    async def anchored() -> Any:
        found = (await sync_lib(user)).highlights["deep"]
        return found if found["anchor"] else None

    found = await eventually(anchored)
    assert found["anchor"] == "exact" and found["start"] == text.index("The one passage")


async def test_account_merge_moves_highlights_and_deletion_purges_them(
    http: httpx.AsyncClient, make_user: Any, sync_lib: Any, publish: Any
) -> None:
    owner, anon, doomed = make_user(), make_user(), make_user()
    await put_bm(http, anon, "b1")
    await put_hl(http, anon, "h1", {"bookmarkId": "b1", "quote": "from the other account"})
    await put_bm(http, doomed, "b1")
    await put_hl(http, doomed, "h1", {"bookmarkId": "b1", "quote": "doomed"})
    await publish(UserMerged(userId=owner.id, sourceUserId=anon.id))
    await publish(UserDeleted(userId=doomed.id))

    async def merged() -> Any:
        return (await sync_lib(owner)).highlights or None

    moved = await eventually(merged)
    assert moved["h1"]["quote"] == "from the other account" and moved["h1"]["bookmarkId"] == "b1"

    async def refused() -> Any:
        response = await put_hl(http, doomed, "h2", {"bookmarkId": "b1", "quote": "x"})
        return response if response.status_code == 401 else None

    await eventually(refused)


async def test_highlight_changes_are_published_for_nudges(http: httpx.AsyncClient, user: Any, infra: Any) -> None:
    consumer = AIOKafkaConsumer(
        "highlight.changed",
        bootstrap_servers=infra.kafka_bootstrap,
        group_id=None,  # no group: joining one costs a rebalance of seconds; events are told apart by user
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        await put_bm(http, user, "b1")
        await put_hl(http, user, "h1", {"bookmarkId": "b1", "quote": "q"})
        await http.delete("/v1/highlights/h1", headers=user.headers)
        mine: list[Any] = []

        async def collect() -> bool:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                mine.extend(e for r in records if (e := parse_event(r.value)).userId == user.id)
            return len(mine) >= 2

        await eventually(collect)
        assert [(type(e), e.highlightId, e.deleted) for e in mine] == [
            (HighlightChanged, "h1", False),
            (HighlightChanged, "h1", True),
        ]
    finally:
        await consumer.stop()


async def test_following_a_bulk_delete_reads_each_highlight_once(
    http: httpx.AsyncClient, user: Any, bookmarks_app: Any
) -> None:
    """The statement that moves highlights with their bookmarks ranks them once: its plan never probes a
    bookmark per pair of highlights (an inlined ranking ran again for every highlight of the user)."""
    count = 120
    for n in range(count):
        await put_bm(http, user, f"b{n}", f"https://pools.example/{n}")
        await put_hl(http, user, f"h{n}", {"bookmarkId": f"b{n}", "quote": f"passage {n}"})
    statement = highlights_store._follow_statement()
    compiled = statement.compile(dialect=postgresql.asyncpg.dialect())  # type: ignore[no-untyped-call]
    values = {"owner": user.id, "ids": [f"b{n}" for n in range(count)]}
    arguments = [values.get(name, compiled.binds[name].value) for name in compiled.positiontup or ()]
    async with bookmarks_app.state.sessions() as session:
        driver = (await (await session.connection()).get_raw_connection()).driver_connection
        # Every bookmark deleted (in this transaction, rolled back): every highlight must follow.
        await driver.execute("UPDATE bookmarks SET deleted_at = now() WHERE owner_uid = $1", user.id)
        found = await driver.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {compiled}", *arguments)
        plan = json.loads(found) if isinstance(found, str) else found
        await session.rollback()

    def loops(node: dict[str, Any]) -> list[int]:
        own = [node["Actual Loops"] * max(1, node["Actual Rows"])] if node.get("Relation Name") == "bookmarks" else []
        return own + [n for child in node.get("Plans", []) for n in loops(child)]

    assert max(loops(plan[0]["Plan"]), default=0) <= 2 * count
