"""BookmarkClient against the in-memory fake service: sessions, the offline queue and delta sync."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from client_fakes import FakeServer, error

from bookmark_client import (
    ApiError,
    Bookmark,
    BookmarkClient,
    Collection,
    NotSignedIn,
    Offline,
    PageProgress,
    PendingChanges,
    SessionExpired,
)

MakeClient = Callable[..., Awaitable[BookmarkClient]]


async def signed_in(make_client: MakeClient, name: str = "device", **kwargs: object) -> BookmarkClient:
    client = await make_client(name, **kwargs)
    await client.sign_in_anonymously()
    return client


# -- session -------------------------------------------------------------------------------------


async def test_session_is_persisted(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    user = client.user
    assert user is not None and user.is_anonymous
    await client.close()
    again = await make_client()
    assert again.user == user
    assert (await again.get_settings()).use_ai is False  # the stored token works


async def test_concurrent_401s_refresh_exactly_once(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    fake.expire_all_access_tokens()
    fake.hold_unauthorized = 5  # every request sees its 401 before any refresh can finish

    results = await asyncio.gather(*(client.get_settings() for _ in range(5)))

    assert all(r.use_ai is False for r in results)
    assert fake.refresh_calls == 1
    assert fake.reuse_detected == 0
    assert client.refresh_count == 1
    # The rotated pair was persisted: a reopened profile works without refreshing again.
    await client.close()
    fake.hold_unauthorized = 0
    reopened = await make_client()
    await reopened.get_settings()
    assert fake.refresh_calls == 1


async def test_a_token_known_to_be_expired_is_refreshed_before_use(make_client: MakeClient, fake: FakeServer) -> None:
    fake.token_lifetime = -60  # the server hands out a token that is already past its exp
    client = await signed_in(make_client)
    fake.token_lifetime = 3600
    await client.get_settings()
    assert fake.refresh_calls == 1
    assert fake.unauthorized_answers == 0  # refreshed ahead of time, no 401 round trip


async def test_rejected_refresh_token_ends_the_session(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    fake.expire_all_access_tokens()
    fake.revoked_families.update(r.family for r in fake.refresh_tokens.values())
    with pytest.raises(SessionExpired) as exc:
        await client.get_settings()
    assert exc.value.code == "invalid-refresh-token"
    assert client.user is None
    with pytest.raises(NotSignedIn):
        await client.get_settings()


async def test_refresh_while_offline_keeps_the_session(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    fake.expire_all_access_tokens()
    fake.script("POST", "/v1/auth/refresh", httpx.ConnectError)
    with pytest.raises(Offline):
        await client.get_settings()
    assert client.user is not None
    assert (await client.get_settings()).use_ai is False  # next try refreshes normally


async def test_logout_refuses_to_drop_unsynced_changes(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    await client.put_bookmark("a", {"url": "https://a.example/"})
    fake.script("PUT", "/v1/bookmarks/", httpx.ConnectError)
    with pytest.raises(PendingChanges) as exc:
        await client.logout()
    assert exc.value.count == 1
    assert client.user is not None

    assert await client.logout(discard_pending=True) is True
    assert client.user is None
    assert await client.list_bookmarks() == [] and await client.pending_operations() == []
    assert len(fake.revoked_families) == 1


# -- offline queue -------------------------------------------------------------------------------


async def test_writes_apply_locally_then_flush_in_order_then_sync(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    local = await client.put_bookmark("a", {"url": "https://www.a.example/x", "title": "A"})
    assert local.pending and local.title == "A" and local.domain == "a.example"
    await client.put_bookmark("b", {"url": "https://b.example/"})
    await client.set_collections("a", ["c1"])
    await client.delete_bookmark("b")
    assert [b.client_bookmark_id for b in await client.list_bookmarks()] == ["a"]
    assert fake.requests.count(("PUT", "/v1/bookmarks/a")) == 0  # nothing sent yet

    done: list[int] = []
    result = await client.flush(on_sent=done.append)
    assert done == [1, 2, 3, 4]  # the sync bar's count of sent changes

    writes = [r for r in fake.requests if r[1].startswith("/v1/bookmarks/") and r[1] != "/v1/bookmarks/delta"]
    assert writes == [
        ("PUT", "/v1/bookmarks/a"),
        ("PUT", "/v1/bookmarks/b"),
        ("PUT", "/v1/bookmarks/a/collections"),
        ("DELETE", "/v1/bookmarks/b"),
    ]
    assert fake.requests[-1] == ("GET", "/v1/bookmarks/delta")  # the sync after the flush
    assert result.sent == 4 and result.rejected == [] and result.sync is not None
    assert await client.pending_operations() == []
    user = client.user
    assert user is not None
    a = await client.get_bookmark("a")
    assert a is not None and not a.pending and a.collection_ids == ["c1"]
    assert a.model_dump(by_alias=True, exclude={"deleted", "deleted_at", "pending"}) == fake.visible(user.id)["a"]


async def test_network_errors_keep_the_op_queued_with_backoff(
    make_client: MakeClient, fake: FakeServer, sleeps: list[float]
) -> None:
    client = await signed_in(make_client)
    await client.put_bookmark("a", {"url": "https://a.example/"})
    fake.script("PUT", "/v1/bookmarks/a", httpx.ConnectError, httpx.ReadTimeout)

    result = await client.flush(sync=False)

    assert result.sent == 1
    assert len(sleeps) == 2
    policy = client.backoff
    assert policy.ceiling(1) * (1 - policy.jitter) <= sleeps[0] <= policy.ceiling(1)
    assert policy.ceiling(2) * (1 - policy.jitter) <= sleeps[1] <= policy.ceiling(2)


async def test_offline_flush_raises_and_keeps_everything(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    await client.put_bookmark("a", {"url": "https://a.example/"})
    await client.put_bookmark("b", {"url": "https://b.example/"})
    fake.script("PUT", "/v1/bookmarks/a", httpx.ConnectError)

    with pytest.raises(Offline):
        await client.flush(max_retries=0)

    ops = await client.pending_operations()
    assert [(o.bookmark_id, o.attempts, o.last_error) for o in ops] == [("a", 1, "offline"), ("b", 0, None)]
    assert (await client.flush()).sent == 2


async def test_client_errors_drop_the_op_and_record_it(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    await client.put_bookmark("a", {"url": "https://a.example/"})
    await client.put_bookmark("b", {"url": "https://b.example/"})
    fake.script("PUT", "/v1/bookmarks/a", error(400, "invalid-url", "The url is not allowed."))

    result = await client.flush()

    assert [(r.bookmark_id, r.status, r.code, r.message) for r in result.rejected] == [
        ("a", 400, "invalid-url", "The url is not allowed.")
    ]
    assert result.sent == 1
    assert await client.get_bookmark("a") is None  # never reached the server: rolled back
    assert (await client.rejected_operations())[0].bookmark_id == "a"
    assert await client.pending_operations() == []


async def test_429_respects_retry_after(make_client: MakeClient, fake: FakeServer, sleeps: list[float]) -> None:
    client = await signed_in(make_client)
    await client.put_bookmark("a", {"url": "https://a.example/"})
    fake.script("PUT", "/v1/bookmarks/a", error(429, "rate-limited", headers={"Retry-After": "7"}))
    assert (await client.flush(sync=False)).sent == 1
    assert sleeps == [7.0]


async def test_long_retry_after_stops_the_flush(make_client: MakeClient, fake: FakeServer, sleeps: list[float]) -> None:
    client = await signed_in(make_client)
    await client.put_bookmark("a", {"url": "https://a.example/"})
    fake.script("PUT", "/v1/bookmarks/a", error(503, "unavailable", headers={"Retry-After": "3600"}))
    with pytest.raises(ApiError) as exc:
        await client.flush(max_retry_after=60)
    assert exc.value.status == 503 and exc.value.retry_after == 3600
    assert sleeps == [] and len(await client.pending_operations()) == 1


async def test_expired_token_during_flush_is_refreshed_and_retried(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    await client.put_bookmark("a", {"url": "https://a.example/"})
    fake.expire_all_access_tokens()
    assert (await client.flush()).sent == 1
    assert fake.refresh_calls == 1


# -- delta sync ----------------------------------------------------------------------------------


async def test_sync_pages_and_resumes_from_the_last_request_cursor(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client, page_size=2)
    user = client.user
    assert user is not None
    for i in range(5):
        fake.server_write(user.id, f"b{i}", url=f"https://e.com/{i}")
    fake.server_delete(user.id, "b1")

    pages: list[PageProgress] = []
    result = await client.sync(on_page=pages.append)

    assert result.pages == 3 and result.upserts == 4 and result.tombstones == 1
    assert [p.upserts + p.tombstones for p in pages] == [2, 2, 1]
    assert sorted(result.changed_ids) == ["b0", "b2", "b3", "b4"]  # b1 was never seen here: nothing to delete
    assert [b.client_bookmark_id for b in await client.list_bookmarks()] == ["b4", "b3", "b2", "b0"]
    last_request_cursor = fake.urls[-1].params.get("cursor")
    assert last_request_cursor is not None

    fake.server_write(user.id, "b0", title="changed elsewhere")
    again = await client.sync()
    # Resumes at the last request's cursor: that page is replayed (harmless), then the newer change.
    assert fake.urls[-1].params.get("cursor") == last_request_cursor
    assert again.changed_ids == ["b0"]
    b0 = await client.get_bookmark("b0")
    assert b0 is not None and b0.title == "changed elsewhere"


async def test_invalid_cursor_triggers_a_full_resync(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    user = client.user
    assert user is not None
    fake.server_write(user.id, "a", url="https://e.com/a")
    await client._store.set_cursor("tampered")

    result = await client.sync()

    assert result.full_resync
    assert [b.client_bookmark_id for b in await client.list_bookmarks()] == ["a"]


async def test_pending_edit_survives_sync_until_flushed(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    user = client.user
    assert user is not None
    await client.put_bookmark("a", {"url": "https://e.com/a", "title": "v1"})
    await client.flush()

    await client.put_bookmark("a", {"title": "offline edit"})  # queued, not flushed
    fake.server_write(user.id, "a", title="other device", isFavorite=True)
    fake.server_enrich(user.id, "a", summary="S", tags=["t"], enrichmentStatus="completed")
    await client.sync()

    a = await client.get_bookmark("a")
    assert a is not None
    assert a.title == "offline edit" and a.pending
    assert a.is_favorite is True and a.summary == "S" and a.tags == ["t"] and a.enrichment_status == "completed"

    await client.flush()  # arrives last at the server: last write wins there
    assert fake.visible(user.id)["a"]["title"] == "offline edit"
    a = await client.get_bookmark("a")
    assert a is not None and a.title == "offline edit" and not a.pending and a.is_favorite


# -- enrichment and settings ---------------------------------------------------------------------


async def test_enrich_needs_consent_then_queues(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    await client.put_bookmark("a", {"url": "https://e.com/a"})
    with pytest.raises(ApiError) as exc:
        await client.enrich("a")
    assert (exc.value.status, exc.value.code) == (403, "consent-required")
    assert (await client.update_settings(use_ai=True)).use_ai is True
    result = await client.enrich("a")
    assert result.status == "pending" and result.accepted and not result.cache_hit
    with pytest.raises(LookupError):
        await client.enrich("unknown")


# -- the library model: user tags, archive state, collections ------------------------------------


async def two_devices(make_client: MakeClient, fake: FakeServer) -> tuple[BookmarkClient, BookmarkClient, str]:
    a = await signed_in(make_client, "device-a")
    user = a.user
    assert user is not None
    b = await make_client("device-b")
    # The same account on a second device: share the session (the fake has no identity providers).
    session = a._sessions.session
    assert session is not None
    await b._sessions.adopt(session, keep_queue=False)
    return a, b, user.id


Library = tuple[dict[str, tuple[Any, ...]], dict[str, tuple[Any, ...]]]


def library(bookmarks: list[Bookmark], collections: list[Collection]) -> Library:
    """What must agree across devices."""
    return (
        {
            b.client_bookmark_id: (b.url, tuple(b.user_tags), b.is_archived, tuple(b.collection_ids), b.updated_at)
            for b in bookmarks
            if not b.deleted
        },
        {c.id: (c.name, c.parent_id, c.updated_at) for c in collections if not c.deleted},
    )


@pytest.mark.parametrize("collection_first", [True, False], ids=["collection-put-first", "bookmark-put-first"])
async def test_offline_collection_and_bookmark_filed_into_it_converge(
    make_client: MakeClient, fake: FakeServer, collection_first: bool
) -> None:
    a, b, user_id = await two_devices(make_client, fake)

    async def create_collection() -> None:
        await a.put_collection("reading", {"name": "Reading"})
        await a.put_collection("deep", {"name": "Deep dives", "parent_id": "reading"})

    if collection_first:
        await create_collection()
    await a.put_bookmark("x", {"url": "https://x.example/", "collectionIds": ["deep"], "userTags": ["Long read"]})
    if not collection_first:
        await create_collection()
    await a.archive_bookmark("x")
    x = await a.get_bookmark("x")
    assert x is not None and x.is_archived and x.collection_ids == ["deep"] and x.pending

    result = await a.flush()
    assert result.rejected == [] and result.sent == 4
    await b.sync()

    server = fake.visible(user_id)["x"]
    assert (server["collectionIds"], server["userTags"], server["isArchived"]) == (["deep"], ["Long read"], True)
    assert fake.visible_collections(user_id)["deep"]["parentId"] == "reading"
    state_a = library(await a.list_bookmarks(), await a.list_collections())
    assert state_a == library(await b.list_bookmarks(), await b.list_collections())
    assert state_a[1] == {
        "reading": ("Reading", None, fake.visible_collections(user_id)["reading"]["updatedAt"]),
        "deep": ("Deep dives", "reading", fake.visible_collections(user_id)["deep"]["updatedAt"]),
    }


async def test_collection_writes_go_to_the_collections_endpoint(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    await client.put_collection("c1", {"name": "One"})
    await client.put_collection("c1", {"name": "Uno"})
    await client.delete_collection("c1")
    await client.flush(sync=False)
    writes = [r for r in fake.requests if r[1].startswith("/v1/collections/")]
    assert writes == [("PUT", "/v1/collections/c1"), ("PUT", "/v1/collections/c1"), ("DELETE", "/v1/collections/c1")]
    gone = await client.get_collection("c1")
    assert gone is not None and gone.deleted and not gone.pending
    with pytest.raises(ValueError, match="collection id"):
        await client.put_collection("bad id", {"name": "x"})
    with pytest.raises(ValueError, match="name"):
        await client.put_collection("c2", {"name": " "})


async def test_deleting_a_collection_elsewhere_reaches_every_bookmark(
    make_client: MakeClient, fake: FakeServer
) -> None:
    a, b, user_id = await two_devices(make_client, fake)
    await a.put_collection("top", {"name": "Top"})
    await a.put_collection("mid", {"name": "Mid", "parentId": "top"})
    await a.put_collection("leaf", {"name": "Leaf", "parentId": "mid"})
    await a.put_bookmark("x", {"url": "https://x.example/", "collectionIds": ["mid", "top"]})
    await a.flush()
    await b.sync()

    await b.delete_collection("mid")
    await b.flush()
    result = await a.sync()

    assert result.collection_tombstones == 1 and set(result.changed_collection_ids) == {"mid", "leaf"}
    assert "x" in result.changed_ids
    for device in (a, b):
        x = await device.get_bookmark("x")
        leaf = await device.get_collection("leaf")
        assert x is not None and x.collection_ids == ["top"]
        assert leaf is not None and leaf.parent_id == "top"  # moved up to the deleted one's parent
    assert library(await a.list_bookmarks(), await a.list_collections()) == library(
        await b.list_bookmarks(), await b.list_collections()
    )


async def test_pending_rename_survives_sync_until_flushed(make_client: MakeClient, fake: FakeServer) -> None:
    a, _, user_id = await two_devices(make_client, fake)
    await a.put_collection("c", {"name": "Original"})
    await a.flush()
    await a.put_collection("c", {"name": "Mine"})  # queued
    fake.server_collection(user_id, "c", name="Theirs")
    fake.server_collection(user_id, "p", name="Parent")
    fake.server_collection(user_id, "c", parentId="p")  # moved elsewhere meanwhile
    await a.sync()
    c = await a.get_collection("c")
    assert c is not None and c.name == "Mine" and c.parent_id == "p" and c.pending

    await a.flush()  # absent parentId keeps the server's: the move made elsewhere stays
    assert fake.visible_collections(user_id)["c"] | {"updatedAt": None} == {
        "id": "c",
        "name": "Mine",
        "parentId": "p",
        "createdAt": "2030-01-01T00:00:00Z",
        "updatedAt": None,
    }
    c = await a.get_collection("c")
    assert c is not None and (c.name, c.parent_id, c.pending) == ("Mine", "p", False)


async def test_tags_and_archive(make_client: MakeClient, fake: FakeServer) -> None:
    client = await signed_in(make_client)
    user = client.user
    assert user is not None
    await client.put_bookmark("x", {"url": "https://x.example/"})
    tagged = await client.tag_bookmark("x", add=["Python", " rust ", "PYTHON"])
    assert tagged.user_tags == ["Python", "rust"]
    tagged = await client.tag_bookmark("x", add=["go"], remove=["RUST"])
    assert tagged.user_tags == ["Python", "go"]
    archived = await client.archive_bookmark("x")
    assert archived.is_archived and archived.pending
    with pytest.raises(ValueError, match="userTags"):
        await client.tag_bookmark("x", add=["bad\x00tag"])
    with pytest.raises(LookupError):
        await client.archive_bookmark("unknown")

    await client.flush()
    server = fake.visible(user.id)["x"]
    assert (server["userTags"], server["isArchived"]) == (["Python", "go"], True)
    assert (await client.archive_bookmark("x", archived=False)).is_archived is False


async def test_pending_tags_survive_sync_and_enrichment_tags_stay_apart(
    make_client: MakeClient, fake: FakeServer
) -> None:
    client = await signed_in(make_client)
    user = client.user
    assert user is not None
    await client.put_bookmark("x", {"url": "https://x.example/"})
    await client.flush()
    await client.tag_bookmark("x", add=["mine"])
    fake.server_write(user.id, "x", userTags=["theirs"], isArchived=True)
    fake.server_enrich(user.id, "x", tags=["ai"], enrichmentStatus="completed")
    await client.sync()
    x = await client.get_bookmark("x")
    assert x is not None
    assert x.user_tags == ["mine"] and x.tags == ["ai"] and x.is_archived is True  # not edited here: theirs
