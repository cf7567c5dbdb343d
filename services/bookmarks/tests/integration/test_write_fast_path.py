"""The bookmark write fast path answers exactly as FastAPI's own routes do.

Each request is sent twice to the same app: once with :class:`BookmarkWriteFastPath` in front of the
routes and once with it taken out, and the two answers (status, body) must be equal. A PUT of the same
body twice is a redundant write, so even a 200's body is identical. The fast path counts what it served,
so a case that should take it and silently fell through to FastAPI fails too.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from bookmarks.api.fast_path import BookmarkWriteFastPath

JSON = "application/json"


@pytest.fixture
def fast_path(bookmarks_app: Any) -> Iterator[dict[str, Any]]:
    """The app's fast path, counting the requests it served itself (``served``), and a switch
    (``off()``/``on()``) that takes it out of the routes and puts it back."""
    routes = bookmarks_app.router.routes
    fast = routes[0]
    assert isinstance(fast, BookmarkWriteFastPath)
    original = fast.handle
    state: dict[str, Any] = {"served": 0}

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        state["served"] += 1
        await original(scope, receive, send)

    fast.handle = counting  # type: ignore[method-assign]
    state["off"] = lambda: routes.remove(fast)
    state["on"] = lambda: routes.insert(0, fast) if routes[0] is not fast else None
    yield state
    state["on"]()
    del fast.handle


@pytest.fixture
async def raw_http(bookmarks_app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=bookmarks_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bookmarks.test") as client:
        yield client


async def _both(http: httpx.AsyncClient, fast_path: dict[str, Any], method: str, path: str, *,
                body: bytes | None = None, headers: dict[str, str]) -> tuple[int, Any]:  # fmt: skip
    """The answer through the fast path, asserted equal to the answer without it."""
    answers = []
    for switch in ("on", "off"):
        fast_path[switch]()
        response = await http.request(method, path, content=body, headers=headers)
        answers.append((response.status_code, response.json() if response.content else None))
    fast_path["on"]()
    assert answers[0] == answers[1]
    return answers[0]


def _auth(user: Any, content_type: str | None = JSON) -> dict[str, str]:
    """The user's token and (unless None) a content type; httpx adds none for raw content."""
    return {**user.headers, **({"Content-Type": content_type} if content_type else {})}


# (body, content type, status) for PUTs that take the fast path: a JSON object the model accepts.
ACCEPTED = [
    (b'{"url": "https://example.com/a", "title": "A"}', JSON, 200),
    (b'{"url": "https://example.com/b", "unknown": 1, "isFavorite": true}', JSON, 200),
    (b'{"url": "https://example.com/c"}', "application/json; charset=utf-8", 200),
    (b'{"url": "https://example.com/d"}', "Application/JSON", 200),
    (b'{"url": "ftp://example.com/e"}', JSON, 400),  # the endpoint refuses the URL
]

# PUTs FastAPI refuses or reads differently: the fast path hands them over with the body replayed.
HANDED_OVER = [
    (b"{", JSON, 400),
    (b"[]", JSON, 400),
    (b"", JSON, 400),
    (b'"https://example.com/"', JSON, 400),
    (b'{"url": "https://example.com/f"}', "text/plain", 400),
    (b'{"url": "https://example.com/g"}', "application/merge-patch+json", 200),  # JSON to FastAPI too
    (b'{"url": "https://example.com/h", "title": "' + b"t" * 1001 + b'"}', JSON, 400),
    (b'{"url": 42}', JSON, 400),
    (b'{"url": "https://example.com/i", "clientSavedAt": 1700000000}', JSON, 400),
    (b"[" * 5000 + b"]" * 5000, JSON, 400),
    (b'{"url": "https://example.com/j"}', None, 400),  # FastAPI wants a content type
]


@pytest.mark.parametrize(("body", "content_type", "status"), ACCEPTED + HANDED_OVER)
async def test_a_put_is_answered_through_the_fast_path_as_fastapi_answers_it(
    raw_http: httpx.AsyncClient,
    fast_path: dict[str, Any],
    user: Any,
    body: bytes,
    content_type: str | None,
    status: int,
) -> None:
    path = f"/v1/bookmarks/fp-{uuid.uuid4().hex[:8]}"
    answer = await _both(raw_http, fast_path, "PUT", path, body=body, headers=_auth(user, content_type))
    assert answer[0] == status, answer
    if status == 400:
        assert set(answer[1]) == {"code", "message"}
    assert fast_path["served"] == 1  # it served the request, or looked and handed it over


async def test_without_a_token_the_checks_come_in_fastapi_s_order(
    raw_http: httpx.AsyncClient, fast_path: dict[str, Any]
) -> None:
    valid = b'{"url": "https://example.com/"}'
    no_token = {"Content-Type": JSON}
    assert (await _both(raw_http, fast_path, "PUT", "/v1/bookmarks/x", body=valid, headers=no_token))[0] == 401
    # A malformed body is refused before the token is looked at, as FastAPI does.
    assert (await _both(raw_http, fast_path, "PUT", "/v1/bookmarks/x", body=b"{", headers=no_token))[0] == 400
    assert (await _both(raw_http, fast_path, "DELETE", "/v1/bookmarks/x", headers=no_token))[0] == 401


async def test_an_oversized_body_is_refused_as_fastapi_refuses_it(
    raw_http: httpx.AsyncClient, fast_path: dict[str, Any], user: Any, bookmarks_settings: Any
) -> None:
    body = b'{"url": "https://example.com/", "notes": "' + b"n" * bookmarks_settings.max_body_bytes + b'"}'
    status, answer = await _both(raw_http, fast_path, "PUT", "/v1/bookmarks/fp-big", body=body, headers=_auth(user))
    assert status == 413 and set(answer) == {"code", "message"}


async def test_a_delete_is_served_by_the_fast_path_as_fastapi_serves_it(
    raw_http: httpx.AsyncClient, fast_path: dict[str, Any], user: Any
) -> None:
    path = "/v1/bookmarks/fp-delete"
    await raw_http.put(path, json={"url": "https://example.com/"}, headers=user.headers)
    fast_path["served"] = 0
    assert await _both(raw_http, fast_path, "DELETE", path, headers=user.headers) == (204, None)
    assert fast_path["served"] == 1


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/v1/bookmarks/a.b"),
        ("PUT", "/v1/bookmarks/" + "a" * 129),
        ("PUT", "/v1/bookmarks/abc%0A"),
        ("DELETE", "/v1/bookmarks/a%20b"),
        ("PUT", "/v1/bookmarks/abc/collections"),
        ("PUT", "/v1/bookmarks/"),
        ("PATCH", "/v1/bookmarks/abc"),
        ("POST", "/v1/bookmarks/abc"),
    ],
)
async def test_other_paths_and_methods_are_left_to_fastapi(
    raw_http: httpx.AsyncClient, fast_path: dict[str, Any], user: Any, method: str, path: str
) -> None:
    body = b'{"url": "https://example.com/", "collectionIds": []}'
    status, answer = await _both(raw_http, fast_path, method, path, body=body, headers=_auth(user))
    assert fast_path["served"] == 0
    assert status in (200, 204, 400, 404, 405), answer
