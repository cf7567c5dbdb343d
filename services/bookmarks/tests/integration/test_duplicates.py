"""Duplicates (docs/api-guide.md, section 14): groups of one page's bookmarks, merged into the one kept
with the field rules; the merged ones go to the trash with ``mergedInto``, and restoring them undoes it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest


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
