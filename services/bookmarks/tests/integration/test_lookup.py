"""GET /v1/bookmarks/lookup: the caller's live bookmark of a URL, by its normalized form."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from bookmarks.store import lookups
from common.events import EnrichmentCompleted, EnrichmentResult
from devstack.testing import eventually


async def lookup(http: httpx.AsyncClient, user: Any, url: str) -> httpx.Response:
    return await http.get("/v1/bookmarks/lookup", params={"url": url}, headers=user.headers)


async def put(http: httpx.AsyncClient, user: Any, bid: str, body: dict[str, Any]) -> httpx.Response:
    response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text
    return response


async def test_any_spelling_of_the_url_finds_the_bookmark_as_put_returned_it(
    http: httpx.AsyncClient, user: Any
) -> None:
    saved = (await put(http, user, "look-1", {"url": "https://example.com/article?id=7", "title": "A"})).json()

    for spelling in (
        "https://example.com/article?id=7",
        "HTTPS://WWW.Example.com:443/article?id=7&utm_source=feed#comments",
    ):
        response = await lookup(http, user, spelling)

        assert response.status_code == 200, (spelling, response.text)
        assert response.json() == saved


async def test_unknown_deleted_and_other_users_bookmarks_are_not_found(
    http: httpx.AsyncClient, user: Any, make_user: Any
) -> None:
    url = f"https://example.com/{uuid.uuid4().hex}"
    other = make_user()
    await put(http, other, "theirs", {"url": url})

    assert (await lookup(http, user, url)).json() == {"code": "not-found", "message": await _message(http, user, url)}
    assert (await lookup(http, other, url)).status_code == 200
    await put(http, user, "mine", {"url": url})
    assert (await lookup(http, user, url)).json()["data"]["clientBookmarkId"] == "mine"
    assert (await http.delete("/v1/bookmarks/mine", headers=user.headers)).status_code == 204
    gone = await lookup(http, user, url)
    assert gone.status_code == 404
    assert gone.json()["code"] == "not-found"


async def _message(http: httpx.AsyncClient, user: Any, url: str) -> str:
    response = await lookup(http, user, url)
    assert response.status_code == 404
    return str(response.json()["message"])


async def test_of_several_bookmarks_of_one_url_the_latest_changed_is_returned(
    http: httpx.AsyncClient, user: Any
) -> None:
    url = f"https://example.com/dup/{uuid.uuid4().hex}"
    await put(http, user, "first", {"url": url})
    await put(http, user, "second", {"url": url + "#x"})
    await put(http, user, "first", {"url": url, "title": "touched"})

    assert (await lookup(http, user, url)).json()["data"]["clientBookmarkId"] == "first"


async def test_a_bookmark_whose_page_names_the_url_as_canonical_is_found_after_those_saved_as_it(
    http: httpx.AsyncClient, user: Any, publish: Any
) -> None:
    article = f"https://news.example/{uuid.uuid4().hex}"
    amp = article.replace("news.example/", "news.example/amp/")
    await put(http, user, "amp", {"url": amp})
    result = EnrichmentResult(normalizedUrl=amp, domain="news.example", canonicalUrl=article)
    await publish(EnrichmentCompleted(userId=user.id, clientBookmarkId="amp", normalizedUrl=amp, result=result))

    async def by_canonical() -> Any:
        found = await lookup(http, user, "https://www.news.example/" + article.rsplit("/", 1)[1] + "?utm_source=x")
        return found.json()["data"] if found.status_code == 200 else None

    found = await eventually(by_canonical)
    assert found["clientBookmarkId"] == "amp" and found["canonicalUrl"] == article
    assert (await lookup(http, user, amp)).json()["data"]["clientBookmarkId"] == "amp"

    await put(http, user, "direct", {"url": article})
    await put(http, user, "amp", {"url": amp, "title": "touched later"})
    assert (await lookup(http, user, article)).json()["data"]["clientBookmarkId"] == "direct"


async def test_bad_urls_are_refused(http: httpx.AsyncClient, user: Any) -> None:
    for url in ("not a url", "ftp://example.com/", "https://", "javascript:alert(1)"):
        response = await lookup(http, user, url)
        assert response.status_code == 400, url
        assert response.json()["code"] == "invalid-url", url
    missing = await http.get("/v1/bookmarks/lookup", headers=user.headers)
    assert missing.status_code == 400
    assert missing.json()["code"] == "invalid-request"
    too_long = await lookup(http, user, "https://example.com/" + "a" * 2100)
    assert too_long.status_code == 400
    assert too_long.json()["code"] == "invalid-request"


async def test_lookup_needs_a_token_and_leaves_put_of_a_bookmark_called_lookup_alone(
    http: httpx.AsyncClient, user: Any
) -> None:
    refused = await http.get("/v1/bookmarks/lookup", params={"url": "https://example.com/"})
    assert refused.status_code == 401
    named = await put(http, user, "lookup", {"url": "https://example.com/named-lookup"})
    assert named.json()["data"]["clientBookmarkId"] == "lookup"
    assert (await lookup(http, user, "https://example.com/named-lookup")).json() == named.json()


async def test_the_lookup_reads_the_indexes(large_library: Any) -> None:
    statement = lookups._BY_URL.params(owner=large_library.owner, normalized_url="https://big.example/17")
    plan = await large_library.plan(statement)
    # Each side is an index read on its condition (the saved URL: ix_bookmarks_live_url or another index of
    # (owner, normalized_url); the key: ix_bookmarks_live_duplicate_key), never a walk of the library.
    conditions = [line for line in plan.splitlines() if "Index Cond" in line]
    assert any("(normalized_url = " in c and "COALESCE" not in c for c in conditions), plan
    assert "ix_bookmarks_live_duplicate_key" in plan, plan
    assert any("COALESCE(canonical_url, normalized_url) = " in c for c in conditions), plan
    assert "Seq Scan" not in plan and "Filter" not in plan, plan
