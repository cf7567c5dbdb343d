"""Highlights in the client: their merge rules, the local store (queue order, delta, what a bookmark's
delete does to them) and the client against the in-memory fake service (flush order, convergence)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from client_fakes import FakeServer

from bookmark_client import BookmarkClient, Highlight
from bookmark_client.merge import apply_op, base_after_sent, materialize, normalize_highlight_fields
from bookmark_client.models import QueuedOp
from bookmark_client.store import LocalStore

MakeClient = Callable[..., Awaitable[BookmarkClient]]


def op(seq: int, kind: str, highlight_id: str = "h1", **payload: object) -> QueuedOp:
    return QueuedOp(seq=seq, kind=kind, bookmark_id=highlight_id, payload=dict(payload), created_at=f"t{seq}")  # type: ignore[arg-type]


def server_highlight(highlight_id: str = "h1", **fields: Any) -> dict[str, Any]:
    return {
        "id": highlight_id,
        "bookmarkId": "b1",
        "quote": "ferns reproduce by spores",
        "prefix": "Unlike mosses, ",
        "suffix": ".",
        "start": 120,
        "end": 145,
        "color": "yellow",
        "note": "",
        "anchor": "exact",
        "createdAt": "2030-01-01T00:00:00Z",
        "updatedAt": "2030-01-01T00:00:01Z",
        **fields,
    }


def server_bookmark(bookmark_id: str = "b1") -> dict[str, Any]:
    return {
        "clientBookmarkId": bookmark_id,
        "url": f"https://example.com/{bookmark_id}",
        "title": f"Page {bookmark_id}",
        "createdAt": "2030-01-01T00:00:00Z",
        "updatedAt": "2030-01-01T00:00:00Z",
    }


# -- merge rules ---------------------------------------------------------------------------------


def test_normalize_trims_the_quote_and_takes_snake_names() -> None:
    fields = normalize_highlight_fields({"bookmark_id": "b1", "quote": "  spores \n", "start": 3, "end": 9})
    assert fields == {"bookmarkId": "b1", "quote": "spores", "start": 3, "end": 9}
    assert normalize_highlight_fields({"prefix": None, "note": None}) == {"prefix": "", "note": ""}


@pytest.mark.parametrize(
    "fields",
    [
        {"quote": "   "},
        {"quote": "x" * 5001},
        {"quote": "nul\x00"},
        {"prefix": "x" * 65},
        {"suffix": 3},
        {"note": "x" * 10_001},
        {"color": "red"},
        {"color": None},
        {"start": 3},
        {"start": 9, "end": 3},
        {"start": -1, "end": 3},
        {"start": True, "end": 3},
        {"bookmarkId": "not an id"},
        {"anchor": "exact"},
    ],
)
def test_normalize_refuses_what_the_server_would(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        normalize_highlight_fields(fields)


def test_a_put_creates_with_the_server_defaults() -> None:
    created = apply_op(None, op(1, "highlight-put", fields={"bookmarkId": "b1", "quote": "q"}), owner=None)
    assert created is not None
    assert (created["id"], created["bookmarkId"], created["quote"], created["color"], created["note"]) == (
        "h1",
        "b1",
        "q",
        "yellow",
        "",
    )
    assert created["anchor"] is None and created["start"] is None and not created["deleted"]


def test_a_put_on_a_known_highlight_changes_only_color_and_note() -> None:
    base = {**server_highlight(), "deleted": False, "deletedAt": None}
    edit = op(
        1, "highlight-put", fields={**{k: base[k] for k in ("bookmarkId", "quote")}, "start": 1, "end": 2, "note": "n"}
    )
    view = materialize(base, [edit], owner=None)
    # The server's offsets and anchor stay: it keeps correcting them, a PUT never does.
    assert view == {**base, "note": "n"}


def test_a_put_over_a_tombstone_creates_it_again_from_the_put_alone() -> None:
    base = {**server_highlight(color="blue", note="old"), "deleted": True, "deletedAt": "2030-01-02T00:00:00Z"}
    view = apply_op(
        base, op(1, "highlight-put", fields={"bookmarkId": "b1", "quote": "ferns", "note": "new"}), owner=None
    )
    assert view is not None and not view["deleted"] and view["deletedAt"] is None
    assert (view["quote"], view["color"], view["note"], view["prefix"]) == ("ferns", "yellow", "new", "")
    assert view["createdAt"] == base["createdAt"]


def test_deletes_and_the_server_copy_after_a_write() -> None:
    assert apply_op(None, op(1, "highlight-delete"), owner=None) is None
    deleted = apply_op(server_highlight(), op(1, "highlight-delete"), owner=None)
    assert deleted is not None and deleted["deleted"] and deleted["deletedAt"] == "t1"
    assert base_after_sent(None, op(1, "highlight-delete"), None) is None
    sent = base_after_sent(None, op(1, "highlight-put", fields={}), server_highlight(note="x"))
    assert sent == {**server_highlight(note="x"), "deleted": False, "deletedAt": None}


# -- store ---------------------------------------------------------------------------------------


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LocalStore]:
    opened = await LocalStore.open(tmp_path / "profile.sqlite")
    yield opened
    await opened.close()


async def test_a_highlight_queues_after_its_bookmark_and_needs_it(store: LocalStore) -> None:
    with pytest.raises(LookupError):
        await store.queue_highlight_put("h1", {"bookmarkId": "b1", "quote": "q"})
    await store.queue_put("b1", {"url": "https://example.com/b1"})
    await store.queue_highlight_put("h1", {"bookmarkId": "b1", "quote": "q"})
    await store.queue_highlight_put("h1", {"note": "my note"})
    await store.queue_highlight_delete("h2")
    ops = await store.pending_ops()
    assert [(o.kind, o.bookmark_id) for o in ops] == [
        ("put", "b1"),
        ("highlight-put", "h1"),
        ("highlight-put", "h1"),
        ("highlight-delete", "h2"),
    ]
    # An edit resends what the server needs in every PUT, and what never changes.
    assert ops[2].payload == {
        "fields": {"bookmarkId": "b1", "quote": "q", "prefix": "", "suffix": "", "note": "my note"}
    }
    highlight = await store.get_highlight("h1")
    assert highlight is not None and highlight["note"] == "my note" and highlight["pending"]
    assert await store.get_highlight("h2") is None  # never known here: nothing to show

    await store.queue_delete("b1")
    with pytest.raises(LookupError):  # the server refuses a highlight of a deleted bookmark
        await store.queue_highlight_put("h3", {"bookmarkId": "b1", "quote": "q"})


async def test_what_never_changes_is_refused_and_a_new_one_needs_its_quote(store: LocalStore) -> None:
    await store.apply_delta_page([server_bookmark()], [], cursor="c1", highlights=[server_highlight()])
    with pytest.raises(ValueError, match="quote"):
        await store.queue_highlight_put("h1", {"quote": "another passage"})
    with pytest.raises(ValueError, match="bookmarkId and quote"):
        await store.queue_highlight_put("h9", {"note": "n"})
    op = await store.queue_highlight_put("h1", {"color": "green"})
    # The known offsets go along: harmless on a merge, and they place it again if it has to be created anew.
    assert op.payload["fields"]["start"] == 120 and op.payload["fields"]["end"] == 145
    assert await store.pending_count() == 1


async def test_queued_edits_stay_over_newer_server_copies_and_tombstones(store: LocalStore) -> None:
    await store.apply_delta_page([server_bookmark()], [], cursor="c1", highlights=[server_highlight()])
    await store.queue_highlight_put("h1", {"note": "mine"})
    # The server re-anchored it meanwhile: its offsets and anchor show, under the queued note.
    moved = server_highlight(start=200, end=225, anchor="fuzzy", updatedAt="2030-01-01T00:00:05Z")
    changes = await store.apply_delta_page([], [], cursor="c2", highlights=[moved])
    assert changes.highlights == ["h1"]
    view = await store.get_highlight("h1")
    assert view is not None and (view["note"], view["start"], view["anchor"]) == ("mine", 200, "fuzzy")
    # A tombstone does not hide the queued PUT: sent, it creates the highlight again.
    await store.apply_delta_page(
        [], [], cursor="c3", highlight_tombstones=[{"id": "h1", "deletedAt": "2030-01-02T00:00:00Z"}]
    )
    view = await store.get_highlight("h1")
    assert view is not None and not view["deleted"] and view["note"] == "mine"


async def test_a_bookmark_deleted_here_takes_its_highlights_along(store: LocalStore) -> None:
    bookmarks = [server_bookmark("b1"), server_bookmark("b2")]
    highlights = [
        server_highlight("old", createdAt="2030-01-01T00:00:00Z"),
        server_highlight("new", createdAt="2030-01-03T00:00:00Z"),
        server_highlight("other", bookmarkId="b2", createdAt="2030-01-02T00:00:00Z"),
    ]
    await store.apply_delta_page(bookmarks, [], cursor="c1", highlights=highlights)
    assert [h["id"] for h in await store.list_highlights()] == ["new", "other", "old"]  # newest first
    assert [h["id"] for h in await store.list_highlights(bookmark_id="b1")] == ["new", "old"]

    await store.queue_delete("b1")
    assert [h["id"] for h in await store.list_highlights()] == ["other"]
    gone = await store.get_highlight("new")
    assert gone is not None and gone["deleted"] and gone["deletedAt"]
    assert len(await store.list_highlights(include_deleted=True)) == 3


async def test_a_rejected_highlight_rolls_back_and_logout_forgets_them(store: LocalStore) -> None:
    await store.apply_delta_page([server_bookmark()], [], cursor="c1", highlights=[server_highlight()])
    queued = await store.queue_highlight_put("h1", {"color": "pink"})
    await store.reject_op(queued, status=400, code="invalid-request", message="bookmarkId must name a live bookmark")
    view = await store.get_highlight("h1")
    assert view is not None and view["color"] == "yellow" and not view["pending"]
    assert [(r.kind, r.bookmark_id) for r in await store.rejected_ops()] == [("highlight-put", "h1")]
    await store.clear_all()
    assert await store.list_highlights(include_deleted=True) == []


# -- client against the fake service -------------------------------------------------------------


async def two_devices(make_client: MakeClient) -> tuple[BookmarkClient, BookmarkClient, str]:
    a = await make_client("device-a")
    user = await a.sign_in_anonymously()
    b = await make_client("device-b")
    session = a._sessions.session  # the same account on a second device (the fake has no identity providers)
    assert session is not None
    await b._sessions.adopt(session, keep_queue=False)
    return a, b, user.id


def marks(highlights: list[Highlight]) -> dict[str, tuple[Any, ...]]:
    return {h.id: (h.bookmark_id, h.quote, h.color, h.note, h.updated_at) for h in highlights}


async def test_an_offline_bookmark_and_its_highlight_reach_the_server_in_order(
    make_client: MakeClient, fake: FakeServer
) -> None:
    a, b, user_id = await two_devices(make_client)
    await a.put_bookmark("b1", {"url": "https://example.com/ferns", "title": "Ferns"})
    highlight = await a.put_highlight("h1", {"bookmark_id": "b1", "quote": " spores ", "note": "read again"})
    assert highlight.pending and highlight.quote == "spores" and highlight.color == "yellow"

    result = await a.flush()
    assert result.rejected == [] and result.sent == 2
    assert [r for r in fake.requests if r[0] == "PUT"] == [("PUT", "/v1/bookmarks/b1"), ("PUT", "/v1/highlights/h1")]
    assert fake.visible_highlights(user_id)["h1"]["note"] == "read again"
    await b.sync()
    assert marks(await b.list_highlights()) == marks(await a.list_highlights()) != {}
    synced = await a.get_highlight("h1")
    assert synced is not None and not synced.pending


@pytest.mark.parametrize("deleter_first", [True, False])
async def test_highlights_converge_when_another_device_deletes_their_bookmark(
    make_client: MakeClient, fake: FakeServer, deleter_first: bool
) -> None:
    a, b, user_id = await two_devices(make_client)
    await a.put_bookmark("b1", {"url": "https://example.com/b1"})
    await a.put_bookmark("b2", {"url": "https://example.com/b2"})
    await a.put_highlight("h1", {"bookmarkId": "b1", "quote": "first"})
    await a.put_highlight("h2", {"bookmarkId": "b2", "quote": "kept"})
    await a.flush()
    await b.sync()

    # Both offline in effect: A highlights and edits, B deletes the bookmark.
    await a.put_highlight("h1", {"note": "edited on A"})
    await a.put_highlight("h3", {"bookmarkId": "b1", "quote": "second"})
    await a.put_highlight("h2", {"color": "green"})
    await b.delete_bookmark("b1")

    first, second = (b, a) if deleter_first else (a, b)
    flushed = [await first.flush(), await second.flush()]
    await first.sync()
    rejected = [(r.kind, r.bookmark_id) for f in flushed for r in f.rejected]
    # Sent after the delete, A's writes on b1 are refused and rolled back; sent before, the delete takes them.
    assert rejected == ([("highlight-put", "h1"), ("highlight-put", "h3")] if deleter_first else [])
    assert marks(await a.list_highlights()) == marks(await b.list_highlights())
    assert set(marks(await a.list_highlights())) == {"h2"} == set(fake.visible_highlights(user_id))
    h2 = await b.get_highlight("h2")
    assert h2 is not None and h2.color == "green"


async def test_a_trash_restore_brings_the_highlights_back_on_another_device(
    make_client: MakeClient, fake: FakeServer
) -> None:
    a, b, _ = await two_devices(make_client)
    await a.put_bookmark("b1", {"url": "https://example.com/b1"})
    await a.put_highlight("h1", {"bookmarkId": "b1", "quote": "keep me", "note": "n"})
    await a.flush()
    await b.sync()
    await a.delete_bookmark("b1")
    await a.flush()
    result = await b.sync()
    assert result.highlight_tombstones == 1 and result.changed_highlight_ids == ["h1"]
    assert await b.list_highlights() == []

    await a.restore_from_trash("b1")
    result = await b.sync()
    assert result.highlights == 1
    back = await b.get_highlight("h1")
    assert back is not None and not back.deleted and back.note == "n"
    assert [h.id for h in await b.list_highlights("b1")] == ["h1"]
