"""BookmarkClient's calls of duplicates (list the groups, merge one) against the in-memory fake service."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from client_fakes import FakeServer

from bookmark_client import ApiError, BookmarkClient


async def test_client_lists_and_merges_duplicates(
    fake: FakeServer, make_client: Callable[..., Awaitable[BookmarkClient]]
) -> None:
    client = await make_client()
    user = await client.sign_in_anonymously()
    saves = {
        "old": ("https://www.ferns.example/guide?utm_source=x", "2026-11-02T09:00:00Z", ["plants"]),
        "new": ("https://ferns.example/guide", "2026-11-20T09:00:00Z", ["reading"]),
        "a1": ("https://a.example/", "2026-11-05T09:00:00Z", []),
        "a2": ("https://A.example/#top", "2026-11-06T09:00:00Z", []),
        "solo": ("https://solo.example/", "2026-11-07T09:00:00Z", []),
    }
    for bookmark_id, (url, saved, tags) in saves.items():
        await client.put_bookmark(bookmark_id, {"url": url, "clientSavedAt": saved, "userTags": tags})
    await client.flush()

    first = await client.list_duplicates(limit=1)
    assert [[b.client_bookmark_id for b in g.bookmarks] for g in first.groups] == [["old", "new"]]
    assert first.groups[0].key == "https://ferns.example/guide"
    second = await client.list_duplicates(limit=1, cursor=first.next_cursor)
    assert [[b.client_bookmark_id for b in g.bookmarks] for g in second.groups] == [["a1", "a2"]]
    assert second.next_cursor is None
    with pytest.raises(ValueError, match="between 1 and 100"):
        await client.list_duplicates(limit=0)

    kept = await client.merge_duplicates("new", ["old", "old"])  # an id given twice is sent once
    assert kept.client_bookmark_id == "new" and kept.user_tags == ["reading", "plants"]
    assert ("POST", "/v1/duplicates/merge") in fake.requests
    (trashed,) = fake.trashed(user.id)
    assert trashed["clientBookmarkId"] == "old"
    items = (await client.list_trash()).items
    assert [(i.bookmark.client_bookmark_id, i.merged_into) for i in items] == [("old", "new")]
    assert [[b.client_bookmark_id for b in g.bookmarks] for g in (await client.list_duplicates()).groups] == [
        ["a1", "a2"]
    ]

    # Restoring the merged one undoes the merge: the group is back.
    await client.restore_from_trash("old")
    assert len((await client.list_duplicates()).groups) == 2

    with pytest.raises(ApiError) as refused:
        await client.merge_duplicates("a1", ["solo"])
    assert refused.value.status == 400 and refused.value.code == "invalid-request"
    with pytest.raises(ValueError, match="between 1 and 100"):
        await client.merge_duplicates("a1", [])
    assert "solo" in fake.visible(user.id)
