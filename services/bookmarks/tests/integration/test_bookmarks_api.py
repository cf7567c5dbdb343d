"""Bookmark endpoints: shapes, merge semantics, idempotency, deletes, collections, isolation."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import httpx

from bookmarks.api import schemas
from bookmarks.domain.model import BOOKMARK_FIELDS as DECLARED

BOOKMARK_FIELDS = {
    "ownerUid",
    "clientBookmarkId",
    "url",
    "normalizedUrl",
    "domain",
    "title",
    "description",
    "thumbnailUrl",
    "summary",
    "saveWhy",
    "tags",
    "enrichmentStatus",
    "snapshotStatus",
    "lastErrorCode",
    "isFavorite",
    "collectionIds",
    "notes",
    "clientSavedAt",
    "lastOpenedAt",
    "createdAt",
    "updatedAt",
    "enrichedAt",
    "userTags",
    "isArchived",
}


def _wire_default(value: Any) -> Any:
    if value is dataclasses.MISSING or value is None:
        return None
    if isinstance(value, enum.Enum):
        return value.value
    return list(value) if isinstance(value, tuple) else value


async def put(http: httpx.AsyncClient, user: Any, bid: str, body: dict[str, Any]) -> httpx.Response:
    return await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)


async def test_create_returns_every_field_with_defaults(http: httpx.AsyncClient, user: Any) -> None:
    response = await put(
        http, user, "b1", {"url": "https://www.Example.com/a?utm_source=x&q=1#frag", "title": "Example"}
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == set(schemas.Bookmark.model_fields) and BOOKMARK_FIELDS <= set(data)
    for name in set(data) - BOOKMARK_FIELDS:  # fields added since: each shows its declared default
        declared = next(f for f in DECLARED if schemas.wire_name(f) == name)
        assert data[name] == _wire_default(declared.default), name
    assert data["ownerUid"] == str(user.id)
    assert data["clientBookmarkId"] == "b1"
    assert data["url"] == "https://www.Example.com/a?utm_source=x&q=1#frag"
    assert data["normalizedUrl"] == "https://example.com/a?q=1"
    assert data["domain"] == "example.com"
    assert data["title"] == "Example"
    assert data["enrichmentStatus"] == "pending" and data["snapshotStatus"] == "pending"
    assert data["tags"] == [] and data["collectionIds"] == []
    assert data["summary"] is None and data["saveWhy"] is None and data["enrichedAt"] is None
    assert data["isFavorite"] is False and data["notes"] is None and data["lastErrorCode"] is None
    assert data["userTags"] == [] and data["isArchived"] is False
    assert data["createdAt"] == data["updatedAt"] and data["updatedAt"].endswith("Z")


async def test_put_merges_present_fields_and_keeps_absent_ones(http: httpx.AsyncClient, user: Any) -> None:
    await put(
        http,
        user,
        "m1",
        {
            "url": "https://a.example/",
            "title": "T",
            "notes": "n",
            "isFavorite": True,
            "collectionIds": ["c1", "c2"],
            "clientSavedAt": "2026-01-02T03:04:05Z",
        },
    )
    response = await put(http, user, "m1", {"url": "https://a.example/", "notes": None, "collectionIds": ["c3"]})
    data = response.json()["data"]
    assert data["title"] == "T"  # absent: kept
    assert data["notes"] is None  # explicit null: cleared
    assert data["isFavorite"] is True
    assert data["collectionIds"] == ["c3"]  # provided: replaces
    assert data["clientSavedAt"] == "2026-01-02T03:04:05.000000Z"


async def test_identical_retry_is_a_no_op(http: httpx.AsyncClient, user: Any) -> None:
    body = {"url": "https://retry.example/", "title": "same"}
    first = (await put(http, user, "r1", body)).json()["data"]
    second = (await put(http, user, "r1", body)).json()["data"]
    assert first == second


async def test_later_write_wins(http: httpx.AsyncClient, user: Any) -> None:
    await put(http, user, "w1", {"url": "https://w.example/", "title": "first"})
    second = (await put(http, user, "w1", {"url": "https://w.example/", "title": "second"})).json()["data"]
    assert second["title"] == "second"
    assert second["updatedAt"] > second["createdAt"]


async def test_url_change_resets_enrichment(http: httpx.AsyncClient, user: Any, bookmarks_app: Any) -> None:
    await put(http, user, "u1", {"url": "https://old.example/"})
    from sqlalchemy import text

    async with bookmarks_app.state.sessions() as session, session.begin():
        await session.execute(
            text(
                "UPDATE bookmarks SET summary='s', tags='{x}', enrichment_status='completed', title='Old' "
                "WHERE owner_uid=:o AND client_bookmark_id='u1'"
            ),
            {"o": user.id},
        )
    data = (await put(http, user, "u1", {"url": "https://new.example/"})).json()["data"]
    assert data["normalizedUrl"] == "https://new.example/"
    assert data["enrichmentStatus"] == "pending" and data["summary"] is None and data["tags"] == []
    assert data["title"] is None


async def test_delete_is_idempotent_and_put_revives(http: httpx.AsyncClient, user: Any, sync: Any) -> None:
    await put(http, user, "d1", {"url": "https://d.example/", "title": "keep"})
    assert (await http.delete("/v1/bookmarks/d1", headers=user.headers)).status_code == 204
    assert (await http.delete("/v1/bookmarks/d1", headers=user.headers)).status_code == 204
    live, dead, _ = await sync(user)
    assert "d1" in dead and "d1" not in live
    revived = (await put(http, user, "d1", {"url": "https://d.example/"})).json()["data"]
    assert revived["title"] == "keep"
    live, dead, _ = await sync(user)
    assert "d1" in live and "d1" not in dead


async def test_delete_of_unknown_id_records_a_tombstone(http: httpx.AsyncClient, user: Any, sync: Any) -> None:
    response = await http.delete("/v1/bookmarks/never-seen", headers=user.headers)
    assert response.status_code == 204 and response.content == b""
    _, dead, _ = await sync(user)
    assert "never-seen" in dead


async def test_collections_replace_and_clear(http: httpx.AsyncClient, user: Any, sync: Any) -> None:
    await put(http, user, "c1", {"url": "https://c.example/", "collectionIds": ["a"]})
    response = await http.put(
        "/v1/bookmarks/c1/collections", json={"collectionIds": ["x", "y", "x"]}, headers=user.headers
    )
    assert response.status_code == 204
    live, _, _ = await sync(user)
    assert live["c1"]["collectionIds"] == ["x", "y"]
    await http.put("/v1/bookmarks/c1/collections", json={"collectionIds": []}, headers=user.headers)
    live, _, _ = await sync(user)
    assert live["c1"]["collectionIds"] == []


async def test_collections_of_unknown_or_deleted_bookmark_is_404(http: httpx.AsyncClient, user: Any) -> None:
    response = await http.put("/v1/bookmarks/nope/collections", json={"collectionIds": []}, headers=user.headers)
    assert response.status_code == 404
    assert response.json() == {"code": "not-found", "message": "No bookmark with this clientBookmarkId."}
    await put(http, user, "gone", {"url": "https://g.example/"})
    await http.delete("/v1/bookmarks/gone", headers=user.headers)
    response = await http.put("/v1/bookmarks/gone/collections", json={"collectionIds": []}, headers=user.headers)
    assert response.status_code == 404


async def test_users_are_isolated_on_every_endpoint(http: httpx.AsyncClient, make_user: Any, sync: Any) -> None:
    alice, bob = make_user(), make_user()
    await put(http, alice, "same", {"url": "https://alice.example/", "title": "alice"})
    await put(http, bob, "same", {"url": "https://bob.example/", "title": "bob"})
    alice_live, _, _ = await sync(alice)
    bob_live, _, _ = await sync(bob)
    assert alice_live["same"]["title"] == "alice" and bob_live["same"]["title"] == "bob"
    assert alice_live["same"]["ownerUid"] == str(alice.id)

    await http.put("/v1/bookmarks/same/collections", json={"collectionIds": ["bobs"]}, headers=bob.headers)
    await http.delete("/v1/bookmarks/same", headers=bob.headers)
    alice_live, alice_dead, _ = await sync(alice)
    assert alice_live["same"]["collectionIds"] == [] and "same" not in alice_dead
    # Only alice's own bookmarks are visible to her (the other tests used other users).
    assert set(alice_live) == {"same"}


async def test_bearer_token_is_required(http: httpx.AsyncClient, access_jwks: Any) -> None:
    for method, path in [
        ("GET", "/v1/bookmarks/delta"),
        ("PUT", "/v1/bookmarks/x"),
        ("DELETE", "/v1/bookmarks/x"),
        ("PUT", "/v1/bookmarks/x/collections"),
    ]:
        response = await http.request(method, path, json={"url": "https://x.example/", "collectionIds": []})
        assert response.status_code == 401, (method, path)
        assert response.json()["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"
    expired = access_jwks.mint(sub="00000000-0000-0000-0000-000000000001", claims={"jti": "j"}, expires_in=-120)
    response = await http.get("/v1/bookmarks/delta", headers={"Authorization": f"Bearer {expired}"})
    assert response.status_code == 401
    response = await http.get("/v1/bookmarks/delta", headers={"Authorization": "Bearer not.a.jwt"})
    assert response.status_code == 401
