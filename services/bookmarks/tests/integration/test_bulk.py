"""Bulk changes with undo (docs/api-guide.md, section 14): by ids or by a search query, each changed
bookmark an ordinary upsert or tombstone in delta; undo puts back what no later write changed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from bookmarks.bulk import service as bulk_service


async def put(http: httpx.AsyncClient, user: Any, bid: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def bulk(http: httpx.AsyncClient, user: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.post("/v1/bookmarks/bulk", json=body, headers=user.headers)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def undo(http: httpx.AsyncClient, user: Any, token: str) -> httpx.Response:
    return await http.post("/v1/bookmarks/bulk/undo", json={"undoToken": token}, headers=user.headers)


async def changes(http: httpx.AsyncClient, user: Any, after: str = "") -> tuple[dict[str, Any], dict[str, str], str]:
    """What the stream moved after the position ``after`` (an ISO time; "" = everything): live records and
    tombstones (id → deletedAt) whose position is later, and the stream's last position."""
    live: dict[str, Any] = {}
    dead: dict[str, str] = {}
    cursor: str | None = None
    while True:
        params = {"limit": "200", **({"cursor": cursor} if cursor else {})}
        data = (await http.get("/v1/bookmarks/delta", params=params, headers=user.headers)).json()["data"]
        for record in data["upserts"]:
            live[record["clientBookmarkId"]] = record
        for tomb in data["tombstones"]:
            live.pop(tomb["clientBookmarkId"], None)
            dead[tomb["clientBookmarkId"]] = tomb["deletedAt"]
        if data["nextCursor"] is None:
            break
        cursor = data["nextCursor"]
    last = max([*(r["updatedAt"] for r in live.values()), *dead.values(), ""])
    moved = {k: r for k, r in live.items() if r["updatedAt"] > after}
    return moved, {k: t for k, t in dead.items() if t > after}, last


async def library(http: httpx.AsyncClient, user: Any, count: int, **extra: Any) -> list[str]:
    ids = [f"b-{n}" for n in range(count)]
    for n, bid in enumerate(ids):
        await put(http, user, bid, {"url": f"https://example.com/{n}", "title": f"Item {n}", **extra})
    return ids


async def test_a_bulk_archive_by_ids_moves_each_changed_bookmark_in_the_stream(
    http: httpx.AsyncClient, user: Any, sync: Callable[..., Awaitable[Any]]
) -> None:
    ids = await library(http, user, 5)
    await put(http, user, "b-0", {"url": "https://example.com/0", "isArchived": True})
    _, _, cursor = await changes(http, user)

    done = await bulk(http, user, {"action": "archive", "ids": [*ids, "unknown"]})
    assert done["affected"] == 4  # b-0 was archived already; unknown ids change nothing
    assert len(done["undoToken"]) >= 40
    live, _, cursor_after = await changes(http, user, cursor)
    assert sorted(live) == ["b-1", "b-2", "b-3", "b-4"] and all(r["isArchived"] for r in live.values())
    assert len({r["updatedAt"] for r in live.values()}) == 4  # a position of its own each

    back = await undo(http, user, done["undoToken"])
    assert back.status_code == 200 and back.json() == {"data": {"restored": 4, "skipped": 0}}
    live, _, _ = await changes(http, user, cursor_after)
    assert sorted(live) == ["b-1", "b-2", "b-3", "b-4"] and not any(r["isArchived"] for r in live.values())
    again = await undo(http, user, done["undoToken"])
    assert again.status_code == 400 and again.json()["code"] == "invalid-request"


async def test_undo_keeps_a_later_write_to_the_same_field_and_not_to_another(
    http: httpx.AsyncClient, user: Any
) -> None:
    await library(http, user, 3, userTags=["keep"])
    done = await bulk(http, user, {"action": "addTags", "ids": ["b-0", "b-1", "b-2"], "tags": ["Later", "keep"]})
    assert done["affected"] == 3
    await put(http, user, "b-0", {"url": "https://example.com/0", "userTags": ["mine"]})  # the same field
    await put(http, user, "b-1", {"url": "https://example.com/1", "title": "Renamed"})  # another field

    result = (await undo(http, user, done["undoToken"])).json()["data"]
    assert result == {"restored": 2, "skipped": 1}
    records = {
        bid: await put(http, user, bid, {"url": f"https://example.com/{bid[-1]}"}) for bid in ("b-0", "b-1", "b-2")
    }
    assert records["b-0"]["userTags"] == ["mine"]
    assert records["b-1"]["userTags"] == ["keep"] and records["b-1"]["title"] == "Renamed"
    assert records["b-2"]["userTags"] == ["keep"]


async def test_a_bulk_delete_by_query_goes_to_the_trash_and_undo_brings_it_back(
    http: httpx.AsyncClient, user: Any, sync: Callable[..., Awaitable[Any]]
) -> None:
    await library(http, user, 4, userTags=["old"])
    await put(http, user, "other", {"url": "https://example.com/other", "userTags": ["new"]})
    done = await bulk(http, user, {"action": "delete", "query": "tag:old"})
    assert done["affected"] == 4
    live, dead, cursor = await changes(http, user)
    assert sorted(dead) == ["b-0", "b-1", "b-2", "b-3"] and sorted(live) == ["other"]
    trash = (await http.get("/v1/trash", headers=user.headers)).json()["data"]["items"]
    assert len(trash) == 4

    assert (await undo(http, user, done["undoToken"])).json()["data"] == {"restored": 4, "skipped": 0}
    live, dead, _ = await changes(http, user, cursor)
    assert sorted(live) == ["b-0", "b-1", "b-2", "b-3"] and live["b-2"]["userTags"] == ["old"]


async def test_collections_and_favorites_in_bulk(http: httpx.AsyncClient, user: Any) -> None:
    await library(http, user, 2)
    assert (await bulk(http, user, {"action": "addToCollection", "ids": ["b-0", "b-1"], "collectionId": "reading"}))[
        "affected"
    ] == 2
    assert (await bulk(http, user, {"action": "favorite", "ids": ["b-0"]}))["affected"] == 1
    done = await bulk(http, user, {"action": "removeFromCollection", "ids": ["b-0", "b-1"], "collectionId": "reading"})
    assert done["affected"] == 2
    record = await put(http, user, "b-0", {"url": "https://example.com/0"})
    assert record["collectionIds"] == [] and record["isFavorite"] is True


@pytest.mark.parametrize(
    "body",
    [
        {"action": "archive"},
        {"action": "archive", "ids": ["b-0"], "query": "tag:x"},
        {"action": "explode", "ids": ["b-0"]},
        {"action": "addTags", "ids": ["b-0"]},
        {"action": "addTags", "ids": ["b-0"], "tags": ["bad\u0007tag"]},
        {"action": "addTags", "ids": ["b-0"], "tags": [f"t{n}" for n in range(51)]},
        {"action": "addToCollection", "ids": ["b-0"]},
        {"action": "archive", "ids": [f"x{n}" for n in range(1001)]},
        {"action": "archive", "ids": ["not an id!"]},
        {"action": "archive", "ids": []},
        {"action": "archive", "query": ""},
        {"action": "archive", "query": "tag:"},
        {"action": "archive", "ids": ["b-0"], "keep": True},
    ],
)
async def test_bad_bulk_requests_are_400_and_change_nothing(
    http: httpx.AsyncClient, user: Any, sync: Callable[..., Awaitable[Any]], body: dict[str, Any]
) -> None:
    await library(http, user, 1)
    _, _, cursor = await changes(http, user)
    response = await http.post("/v1/bookmarks/bulk", json=body, headers=user.headers)
    assert response.status_code == 400, (body, response.text)
    assert response.json()["code"] in ("invalid-request", "invalid-query")
    live, dead, _ = await changes(http, user, cursor)
    assert live == {} and dead == {}


async def test_tags_past_the_limit_on_one_bookmark_refuse_the_whole_call(
    http: httpx.AsyncClient, user: Any, sync: Callable[..., Awaitable[Any]]
) -> None:
    await put(http, user, "full", {"url": "https://example.com/full", "userTags": [f"t{n}" for n in range(49)]})
    await put(http, user, "empty", {"url": "https://example.com/empty"})
    _, _, cursor = await changes(http, user)
    response = await http.post(
        "/v1/bookmarks/bulk",
        json={"action": "addTags", "ids": ["empty", "full"], "tags": ["x", "y"]},
        headers=user.headers,
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid-request"
    live, _, _ = await changes(http, user, cursor)
    assert live == {}


async def test_a_query_matching_more_than_the_limit_is_refused(
    http: httpx.AsyncClient, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    await library(http, user, 4, userTags=["many"])
    monkeypatch.setattr(bulk_service, "MAX_MATCHES", 3)
    response = await http.post(
        "/v1/bookmarks/bulk", json={"action": "archive", "query": "tag:many"}, headers=user.headers
    )
    assert response.status_code == 400 and "more than 3" in response.json()["message"]


async def test_undo_tokens_are_the_owners_and_known(http: httpx.AsyncClient, user: Any, make_user: Any) -> None:
    await library(http, user, 1)
    done = await bulk(http, user, {"action": "favorite", "ids": ["b-0"]})
    for token, who in ((done["undoToken"], make_user()), ("made-up-token", user)):
        response = await undo(http, who, token)
        assert response.status_code == 400 and response.json()["code"] == "invalid-request"
    assert (await undo(http, user, done["undoToken"])).status_code == 200


async def test_search_sees_bulk_changes_and_restored_bookmarks(http: httpx.AsyncClient, user: Any) -> None:
    async def found(q: str) -> list[str]:
        response = await http.get("/v1/bookmarks/search", params={"q": q}, headers=user.headers)
        assert response.status_code == 200, response.text
        return sorted(r["bookmark"]["clientBookmarkId"] for r in response.json()["data"]["results"])

    await put(http, user, "s1", {"url": "https://example.com/s1", "title": "Sourdough starter care"})
    await put(http, user, "s2", {"url": "https://example.com/s2", "title": "Sourdough scoring"})
    await bulk(http, user, {"action": "addTags", "ids": ["s1", "s2"], "tags": ["Baking"]})
    assert await found("tag:baking") == ["s1", "s2"]
    assert await found("starter") == ["s1"]  # the text index is rebuilt with the row, not lost
    done = await bulk(http, user, {"action": "delete", "query": "sourdough"})
    assert done["affected"] == 2 and await found("sourdough") == []
    assert (await undo(http, user, done["undoToken"])).json()["data"]["restored"] == 2
    assert await found("sourdough") == ["s1", "s2"] and await found("tag:baking") == ["s1", "s2"]
