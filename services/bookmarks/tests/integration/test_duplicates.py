"""Duplicates (docs/api-guide.md, section 14): groups of one page's bookmarks, merged into the one kept
with the field rules; the merged ones go to the trash with ``mergedInto``, and restoring them undoes it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from bookmarks.duplicates import store
from common.events import EnrichmentCompleted, EnrichmentResult
from devstack.testing import eventually


async def put(http: httpx.AsyncClient, user: Any, bid: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def groups(http: httpx.AsyncClient, user: Any, **params: Any) -> dict[str, Any]:
    response = await http.get("/v1/duplicates", params=params, headers=user.headers)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def merge(http: httpx.AsyncClient, user: Any, keep: str, ids: list[str]) -> httpx.Response:
    return await http.post("/v1/duplicates/merge", json={"keep": keep, "merge": ids}, headers=user.headers)


async def test_spellings_of_one_page_are_one_group_oldest_first_newest_group_first(
    http: httpx.AsyncClient, user: Any
) -> None:
    await put(
        http, user, "phone", {"url": "https://www.example.com/a?utm_source=x", "clientSavedAt": "2024-01-02T00:00:00Z"}
    )
    await put(http, user, "laptop", {"url": "https://example.com/a", "clientSavedAt": "2024-01-01T00:00:00Z"})
    await put(http, user, "single", {"url": "https://example.com/alone"})
    await put(http, user, "b1", {"url": "https://example.com/b", "clientSavedAt": "2025-06-01T00:00:00Z"})
    await put(http, user, "b2", {"url": "https://EXAMPLE.com/b#frag", "clientSavedAt": "2025-06-02T00:00:00Z"})
    await put(http, user, "gone", {"url": "https://example.com/b"})
    assert (await http.delete("/v1/bookmarks/gone", headers=user.headers)).status_code == 204

    found = await groups(http, user)
    assert [(g["key"], [b["clientBookmarkId"] for b in g["bookmarks"]]) for g in found["groups"]] == [
        ("https://example.com/b", ["b1", "b2"]),
        ("https://example.com/a", ["laptop", "phone"]),
    ]
    first = await groups(http, user, limit=1)
    second = await groups(http, user, limit=1, cursor=first["nextCursor"])
    assert [g["key"] for g in first["groups"] + second["groups"]] == ["https://example.com/b", "https://example.com/a"]
    assert second["nextCursor"] is None


async def test_a_merge_follows_the_field_rules_and_restoring_undoes_it(http: httpx.AsyncClient, user: Any) -> None:
    await put(http, user, "keep", {"url": "https://example.com/p", "userTags": ["Rust"], "notes": "mine",
                                   "collectionIds": ["c1"], "isArchived": True, "clientSavedAt": "2024-05-01T00:00:00Z"})  # fmt: skip
    await put(http, user, "dup1", {"url": "https://example.com/p", "title": "From the phone", "userTags": ["rust", "later"],
                                   "notes": "mine", "isFavorite": True, "collectionIds": ["c2", "c1"],
                                   "isArchived": True, "clientSavedAt": "2023-01-01T00:00:00Z"})  # fmt: skip
    await put(http, user, "dup2", {"url": "https://example.com/p?utm_medium=x", "description": "Second",
                                   "notes": "other thought", "isArchived": False})  # fmt: skip

    response = await merge(http, user, "keep", ["dup1", "dup2"])
    assert response.status_code == 200, response.text
    kept = response.json()["data"]
    assert kept["clientBookmarkId"] == "keep"
    assert kept["userTags"] == ["Rust", "later"]
    assert kept["collectionIds"] == ["c1", "c2"]
    assert kept["isFavorite"] is True and kept["isArchived"] is False
    assert kept["clientSavedAt"].startswith("2023-01-01")
    assert (kept["title"], kept["description"]) == ("From the phone", "Second")
    assert kept["notes"] == "mine\n\nother thought"
    assert (await groups(http, user))["groups"] == []

    trash = (await http.get("/v1/trash", headers=user.headers)).json()["data"]["items"]
    assert sorted((i["bookmark"]["clientBookmarkId"], i["mergedInto"]) for i in trash) == [
        ("dup1", "keep"),
        ("dup2", "keep"),
    ]
    for bid in ("dup1", "dup2"):
        assert (await http.post(f"/v1/trash/{bid}/restore", headers=user.headers)).status_code == 200
    assert [len(g["bookmarks"]) for g in (await groups(http, user))["groups"]] == [3]
    # A later ordinary delete of a once-merged bookmark is not a merge.
    assert (await http.delete("/v1/bookmarks/dup1", headers=user.headers)).status_code == 204
    trash = (await http.get("/v1/trash", headers=user.headers)).json()["data"]["items"]
    assert [(i["bookmark"]["clientBookmarkId"], i["mergedInto"]) for i in trash] == [("dup1", None)]


@pytest.mark.parametrize(
    "body",
    [
        {"keep": "a", "merge": ["a", "b"]},
        {"keep": "a", "merge": ["c"]},
        {"keep": "a", "merge": ["missing"]},
        {"keep": "missing", "merge": ["b"]},
        {"keep": "a", "merge": []},
        {"keep": "a", "merge": [f"x{n}" for n in range(101)]},
        {"keep": "a"},
        {"keep": "a", "merge": ["b"], "extra": 1},
    ],
)
async def test_bad_merges_are_400_and_change_nothing(http: httpx.AsyncClient, user: Any, body: dict[str, Any]) -> None:
    await put(http, user, "a", {"url": "https://example.com/same"})
    await put(http, user, "b", {"url": "https://example.com/same"})
    await put(http, user, "c", {"url": "https://example.com/different"})
    response = await http.post("/v1/duplicates/merge", json=body, headers=user.headers)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid-request"
    assert [len(g["bookmarks"]) for g in (await groups(http, user))["groups"]] == [2]


async def test_another_users_bookmarks_are_neither_grouped_nor_merged(
    http: httpx.AsyncClient, user: Any, make_user: Any
) -> None:
    other = make_user()
    await put(http, user, "mine", {"url": "https://example.com/shared"})
    await put(http, other, "theirs", {"url": "https://example.com/shared"})
    assert (await groups(http, user))["groups"] == []
    response = await merge(http, user, "mine", ["theirs"])
    assert response.status_code == 400
    assert (await groups(http, other))["groups"] == []


# --- canonical URLs: the key is the page's canonical URL, else the normalized URL ---------------------------

ARTICLE = "https://news.example/article"


async def enrich(publish: Any, sync: Any, user: Any, bid: str, url: str, canonical: str | None) -> dict[str, Any]:
    """Apply an enrichment result naming ``canonical`` through bookmarks' consumer; the record as a device
    receives it through delta."""
    result = EnrichmentResult(normalizedUrl=url, domain=url.split("/")[2], title=f"Title {bid}", canonicalUrl=canonical)
    await publish(EnrichmentCompleted(userId=user.id, clientBookmarkId=bid, normalizedUrl=url, result=result))

    async def applied() -> Any:
        live, _, _ = await sync(user)
        record = live.get(bid)
        return record if record and record["enrichmentStatus"] == "completed" else None

    return dict(await eventually(applied))


async def test_amp_mobile_and_tracking_copies_group_with_the_article_by_its_canonical_url_and_merge(
    http: httpx.AsyncClient, user: Any, publish: Any, sync: Any
) -> None:
    await put(http, user, "article", {"url": ARTICLE, "userTags": ["news"], "clientSavedAt": "2024-01-01T00:00:00Z"})
    await put(http, user, "amp", {"url": "https://news.example/amp/article", "clientSavedAt": "2024-01-02T00:00:00Z"})
    await put(http, user, "mobile", {"url": "https://m.news.example/article?fbclid=1", "userTags": ["phone"],
                                     "clientSavedAt": "2024-01-03T00:00:00Z"})  # fmt: skip
    await put(http, user, "other", {"url": "https://news.example/other"})
    assert (await groups(http, user))["groups"] == []

    # The pages name the article (the mobile one with a tracking variant, normalized by enrichment).
    amp = await enrich(publish, sync, user, "amp", "https://news.example/amp/article", ARTICLE)
    mobile = await enrich(publish, sync, user, "mobile", "https://m.news.example/article", ARTICLE)
    other = await enrich(publish, sync, user, "other", "https://news.example/other", None)
    assert amp["canonicalUrl"] == mobile["canonicalUrl"] == ARTICLE  # devices see it through delta
    assert other["canonicalUrl"] is None
    assert amp["url"] == "https://news.example/amp/article" and mobile["userTags"] == ["phone"]  # user fields kept

    found = await groups(http, user)
    assert [(g["key"], [b["clientBookmarkId"] for b in g["bookmarks"]]) for g in found["groups"]] == [
        (ARTICLE, ["article", "amp", "mobile"])
    ]
    assert (await merge(http, user, "article", ["amp", "other"])).status_code == 400  # other is no duplicate

    response = await merge(http, user, "article", ["amp", "mobile"])
    assert response.status_code == 200, response.text
    kept = response.json()["data"]
    assert kept["userTags"] == ["news", "phone"] and kept["url"] == ARTICLE
    assert (await groups(http, user))["groups"] == []
    assert (await http.post("/v1/trash/mobile/restore", headers=user.headers)).status_code == 200
    assert [[b["clientBookmarkId"] for b in g["bookmarks"]] for g in (await groups(http, user))["groups"]] == [
        ["article", "mobile"]
    ]


async def test_two_copies_naming_one_canonical_url_group_without_the_article_and_a_new_url_leaves(
    http: httpx.AsyncClient, user: Any, publish: Any, sync: Any
) -> None:
    await put(http, user, "amp", {"url": "https://news.example/amp/article"})
    await put(http, user, "mobile", {"url": "https://m.news.example/article"})
    await enrich(publish, sync, user, "amp", "https://news.example/amp/article", ARTICLE)
    await enrich(publish, sync, user, "mobile", "https://m.news.example/article", ARTICLE)
    assert [g["key"] for g in (await groups(http, user))["groups"]] == [ARTICLE]

    # Another URL: what enrichment said about the old page, its canonical URL too, no longer holds.
    moved = await put(http, user, "mobile", {"url": "https://m.news.example/elsewhere"})
    assert moved["canonicalUrl"] is None
    assert (await groups(http, user))["groups"] == []


async def test_a_page_on_another_site_naming_the_article_is_never_its_duplicate(
    http: httpx.AsyncClient, user: Any, publish: Any, sync: Any
) -> None:
    await put(http, user, "evil", {"url": "https://evil.example/copy"})
    # A result claiming the article (enrichment refuses such a canonical URL; bookmarks drops it as well).
    evil = await enrich(publish, sync, user, "evil", "https://evil.example/copy", ARTICLE)
    assert evil["canonicalUrl"] is None
    lookup = await http.get("/v1/bookmarks/lookup", params={"url": ARTICLE}, headers=user.headers)
    assert lookup.status_code == 404

    await put(http, user, "real", {"url": ARTICLE})
    assert (await groups(http, user))["groups"] == []
    assert (await merge(http, user, "real", ["evil"])).status_code == 400
    lookup = await http.get("/v1/bookmarks/lookup", params={"url": ARTICLE}, headers=user.headers)
    assert lookup.json()["data"]["clientBookmarkId"] == "real"


async def test_the_listing_reads_the_owners_rows_and_its_members_the_duplicate_key_index(
    large_library: Any,
) -> None:
    owner = large_library.owner
    after = store.GroupKey("https://big.example/9", datetime(2026, 1, 1, tzinfo=UTC))
    for statement in (
        store.group_keys_statement(owner, after=None, limit=21),
        store.group_keys_statement(owner, after=after, limit=21),
    ):
        plan = await large_library.plan(statement)
        assert "Seq Scan" not in plan, plan  # one owner's live rows, whichever of its indexes
    plan = await large_library.plan(store.members_statement(owner, ["https://big.example/1", "https://big.example/2"]))
    assert "ix_bookmarks_live_duplicate_key" in plan, plan
    assert "Seq Scan" not in plan, plan
