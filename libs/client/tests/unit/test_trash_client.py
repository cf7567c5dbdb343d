"""BookmarkClient's calls of the trash (list, restore one or since a time, purge, empty) against the
in-memory fake service."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

import pytest
from client_fakes import FakeServer

from bookmark_client import BookmarkClient


async def test_client_calls_of_the_trash(
    fake: FakeServer, make_client: Callable[..., Awaitable[BookmarkClient]]
) -> None:
    client = await make_client()
    user = await client.sign_in_anonymously()
    for n in range(5):
        await client.put_bookmark(f"b{n}", {"url": f"https://t{n}.example/", "title": f"T{n}"})
    await client.flush()
    for n in range(5):
        await client.delete_bookmark(f"b{n}")
    await client.flush()

    first = await client.list_trash(limit=2)
    assert [i.bookmark.client_bookmark_id for i in first.items] == ["b4", "b3"]  # most recently deleted first
    assert first.items[0].bookmark.title == "T4" and first.items[0].merged_into is None
    assert first.items[0].deleted_at < first.items[0].purge_at
    second = await client.list_trash(limit=2, cursor=first.next_cursor)
    assert [i.bookmark.client_bookmark_id for i in second.items] == ["b2", "b1"]
    with pytest.raises(ValueError, match="between 1 and 100"):
        await client.list_trash(limit=101)

    restored = await client.restore_from_trash("b4")
    assert restored.client_bookmark_id == "b4" and restored.title == "T4"
    assert "b4" in fake.visible(user.id)
    await client.sync()
    local = await client.get_bookmark("b4")
    assert local is not None and not local.deleted

    await client.purge_from_trash("b3")
    await client.purge_from_trash("b3")  # idempotent
    assert [r["clientBookmarkId"] for r in fake.trashed(user.id)] == ["b2", "b1", "b0"]
    since = fake.trashed(user.id)[1]["_deletedAt"]  # b1's deletion: b1 and b2 were deleted at or after it
    assert await client.restore_deleted_since(since) == 2
    assert await client.restore_deleted_since(datetime(2000, 1, 1)) == 1  # naive: UTC
    await client.delete_bookmark("b2")
    await client.flush()
    await client.empty_trash()
    assert fake.trashed(user.id) == []
    assert sorted(fake.visible(user.id)) == ["b0", "b1", "b4"]
