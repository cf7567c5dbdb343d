"""Bad input gets a clear {code, message} naming the field, and writes nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

LONG = "x" * 10_001


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"url": "ftp://example.com/file"}, "invalid-url", None),
        ({"url": "javascript:alert(1)"}, "invalid-url", None),
        ({"url": "https://"}, "invalid-url", None),
        ({"url": "https://e.com/" + "a" * 2048}, "invalid-request", "url"),
        ({}, "invalid-request", "url"),
        ({"url": 42}, "invalid-request", "url"),
        ({"url": "https://e.com/", "title": "t" * 1001}, "invalid-request", "title"),
        ({"url": "https://e.com/", "notes": LONG}, "invalid-request", "notes"),
        ({"url": "https://e.com/", "isFavorite": "yes"}, "invalid-request", "isFavorite"),
        ({"url": "https://e.com/", "clientSavedAt": "yesterday"}, "invalid-request", "clientSavedAt"),
        ({"url": "https://e.com/", "clientSavedAt": 1700000000}, "invalid-request", "clientSavedAt"),
        ({"url": "https://e.com/", "lastOpenedAt": "2026-13-45T00:00:00Z"}, "invalid-request", "lastOpenedAt"),
        ({"url": "https://e.com/", "collectionIds": "c1"}, "invalid-request", "collectionIds"),
        ({"url": "https://e.com/", "collectionIds": [1, 2]}, "invalid-request", "collectionIds"),
        ({"url": "https://e.com/", "collectionIds": [""]}, "invalid-request", "collectionIds"),
    ],
)
async def test_bad_bodies(
    http: httpx.AsyncClient, user: Any, sync: Any, body: Any, code: str, field: str | None
) -> None:
    response = await http.put("/v1/bookmarks/v1", json=body, headers=user.headers)
    assert response.status_code == 400, response.text
    error = response.json()
    assert set(error) == {"code", "message"} and error["code"] == code
    if field:
        assert field in error["message"]
    live, dead, _ = await sync(user)
    assert not live and not dead


async def test_malformed_json_and_non_object_bodies(http: httpx.AsyncClient, user: Any) -> None:
    headers = {**user.headers, "content-type": "application/json"}
    response = await http.put("/v1/bookmarks/j1", content=b'{"url": "https://e.com/",', headers=headers)
    assert response.status_code == 400
    assert response.json() == {"code": "invalid-request", "message": "The request body is not valid JSON."}
    response = await http.put("/v1/bookmarks/j1", content=b'["https://e.com/"]', headers=headers)
    assert response.status_code == 400 and response.json()["code"] == "invalid-request"


@pytest.mark.parametrize("bad_id", ["has space", "a" * 129, "semi;colon", "%2E%2E", "ümlaut", "nul%00id"])
async def test_bad_client_bookmark_ids(http: httpx.AsyncClient, user: Any, bad_id: str) -> None:
    response = await http.put(f"/v1/bookmarks/{bad_id}", json={"url": "https://e.com/"}, headers=user.headers)
    assert response.status_code in (400, 404)
    body = response.json()
    assert set(body) == {"code", "message"}
    if response.status_code == 400:
        assert body["code"] == "invalid-request" and "clientBookmarkId" in body["message"]


@pytest.mark.parametrize("limit", ["0", "1001", "-1", "abc", "1.5"])
async def test_bad_limits(http: httpx.AsyncClient, user: Any, limit: str) -> None:
    response = await http.get("/v1/bookmarks/delta", params={"limit": limit}, headers=user.headers)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid-request" and "limit" in response.json()["message"]


async def test_body_over_one_mib_is_413(http: httpx.AsyncClient, user: Any) -> None:
    body = b'{"url": "https://e.com/", "notes": "' + b"x" * (1024 * 1024) + b'"}'
    response = await http.put(
        "/v1/bookmarks/big", content=body, headers={**user.headers, "content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["code"] == "payload-too-large"


async def test_unknown_route_and_method(http: httpx.AsyncClient, user: Any) -> None:
    response = await http.get("/v1/bookmarks/x/y/z", headers=user.headers)
    assert response.status_code == 404 and response.json()["code"] == "not-found"
    response = await http.post("/v1/bookmarks/delta", headers=user.headers)
    assert response.status_code == 405 and response.json()["code"] == "method-not-allowed"


NUL = "a\u0000b"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "https://e.com/" + NUL}, "url"),
        ({"url": "https://e.com/", "title": NUL}, "title"),
        ({"url": "https://e.com/", "notes": NUL}, "notes"),
        ({"url": "https://e.com/", "description": NUL}, "description"),
        ({"url": "https://e.com/", "thumbnailUrl": "https://e.com/" + NUL}, "thumbnailUrl"),
        ({"url": "https://e.com/", "collectionIds": ["ok", NUL]}, "collectionIds"),
        ({"url": "https://e.com/", "clientSavedAt": "1"}, "clientSavedAt"),
        ({"url": "https://e.com/", "clientSavedAt": "1700000000"}, "clientSavedAt"),
        ({"url": "https://e.com/", "lastOpenedAt": 1700000000.5}, "lastOpenedAt"),
        ({"url": "https://e.com/", "clientSavedAt": "9999-12-31T23:59:59-23:59"}, "clientSavedAt"),
        ({"url": "https://e.com/", "lastOpenedAt": "0001-01-01T00:00:00+14:00"}, "lastOpenedAt"),
        ({"url": "https://e.com/", "lastOpenedAt": "2026-01-31"}, "lastOpenedAt"),
    ],
)
async def test_nul_text_and_bad_timestamps_are_refused(
    http: httpx.AsyncClient, user: Any, sync: Any, body: Any, field: str
) -> None:
    response = await http.put("/v1/bookmarks/n1", json=body, headers=user.headers)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid-request" and field in response.json()["message"]
    live, dead, _ = await sync(user)
    assert not live and not dead


@pytest.mark.parametrize("field", ["title", "notes", "url"])
async def test_unpaired_surrogates_are_refused(http: httpx.AsyncClient, user: Any, sync: Any, field: str) -> None:
    # Valid JSON (an escaped lone surrogate) that no UTF-8 database can store.
    raw = '{"url": "https://e.com/", "' + field + '": "https://e.com/a\\ud800b"}'
    response = await http.put(
        "/v1/bookmarks/s1", content=raw.encode(), headers={**user.headers, "content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid-request" and field in response.json()["message"]
    live, dead, _ = await sync(user)
    assert not live and not dead


async def test_nul_in_an_update_changes_nothing(http: httpx.AsyncClient, user: Any, sync: Any) -> None:
    created = await http.put(
        "/v1/bookmarks/n2",
        json={"url": "https://e.com/", "title": "kept", "collectionIds": ["c1"]},
        headers=user.headers,
    )
    assert created.status_code == 200
    for path, body in [
        ("/v1/bookmarks/n2", {"url": "https://e.com/", "title": NUL}),
        ("/v1/bookmarks/n2", {"url": "https://e.com/", "lastOpenedAt": "9999-12-31T23:59:59-23:59"}),
        ("/v1/bookmarks/n2/collections", {"collectionIds": [NUL]}),
    ]:
        response = await http.put(path, json=body, headers=user.headers)
        assert response.status_code == 400 and response.json()["code"] == "invalid-request", response.text
    live, _, _ = await sync(user)
    assert live["n2"]["title"] == "kept" and live["n2"]["collectionIds"] == ["c1"]
    assert live["n2"]["updatedAt"] == created.json()["data"]["updatedAt"]


async def test_timestamps_are_stored_as_the_same_instant(http: httpx.AsyncClient, user: Any) -> None:
    response = await http.put(
        "/v1/bookmarks/t1",
        json={
            "url": "https://e.com/",
            "clientSavedAt": "0001-01-01T00:00:00-01:00",
            "lastOpenedAt": "9999-12-31T23:59:59+00:00",
        },
        headers=user.headers,
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["clientSavedAt"].startswith("0001-01-01T01:00:00")
    assert data["lastOpenedAt"].startswith("9999-12-31T23:59:59")


async def test_altered_cursors_are_invalid_cursor(http: httpx.AsyncClient, user: Any) -> None:
    for i in range(3):
        await http.put(f"/v1/bookmarks/c{i}", json={"url": f"https://e.com/{i}"}, headers=user.headers)
    first = await http.get("/v1/bookmarks/delta", params={"limit": "1"}, headers=user.headers)
    cursor = first.json()["data"]["nextCursor"]
    assert cursor
    ok = await http.get("/v1/bookmarks/delta", params={"cursor": cursor}, headers=user.headers)
    assert ok.status_code == 200
    body, mac = cursor.split(".")
    for altered in [
        cursor + "!",
        cursor + "~",
        cursor + " ",
        " " + cursor,
        cursor + "=",
        f"{body}=.{mac}",
        f"{body}.{mac}==",
        cursor + "\u0000",
    ]:
        response = await http.get("/v1/bookmarks/delta", params={"cursor": altered}, headers=user.headers)
        assert response.status_code == 400, (altered, response.text)
        assert response.json()["code"] == "invalid-cursor"


async def test_non_string_alg_or_kid_in_the_token_header_is_401(
    http: httpx.AsyncClient, user: Any, access_jwks: Any, sync: Any
) -> None:
    hostile = access_jwks.hostile_header_tokens(sub=str(user.id), claims={"jti": "j"})
    for name, token in hostile.items():
        for method, path, body in (
            ("GET", "/v1/bookmarks/delta", None),
            ("PUT", "/v1/bookmarks/h1", {"url": "https://e.com/"}),
        ):
            response = await http.request(method, path, json=body, headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 401, (name, path, response.text)
            assert response.json()["code"] == "unauthorized"
    live, dead, _ = await sync(user)
    assert not live and not dead
