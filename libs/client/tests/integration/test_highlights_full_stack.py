"""Highlights through the whole platform: offline work on two devices converging while one deletes the
bookmark, a trash restore and a duplicates merge reaching another device, and ``bookmarks highlights`` from
the command line (piped and in a real terminal) once a captured page anchors them.

Nothing here measures time: effects that travel through the broker are awaited with ``eventually``.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import cli
from tmux_support import Tmux, cli_command, tmux_server

from bookmark_client import BookmarkClient, Highlight, Offline
from devstack.testing import LocalJwksServer, eventually, free_port

pytestmark = pytest.mark.e2e


def identity(idp: LocalJwksServer, sub: str) -> str:
    return idp.mint(sub=sub, claims={"name": "Hana Highlighter", "email": f"{sub}@example.test"})


def marks(highlights: list[Highlight]) -> dict[str, tuple[Any, ...]]:
    """What must agree across devices: each live highlight's fields, with the server's updatedAt."""
    return {h.id: (h.bookmark_id, h.quote, h.color, h.note, h.updated_at) for h in highlights if not h.deleted}


async def fresh_device(gateway: str, path: Path, token: str) -> dict[str, tuple[Any, ...]]:
    """The server's highlights, as a new device of the account sees them from scratch."""
    async with BookmarkClient(gateway, store_path=path) as device:
        await device.sign_in_with_idp_a(token)
        await device.sync()
        return marks(await device.list_highlights())


@pytest.mark.parametrize("deleter_first", [True, False], ids=["deleter-flushes-first", "highlighter-flushes-first"])
async def test_offline_highlights_converge_while_another_device_deletes_their_bookmark(
    stack: Any, idp_a: LocalJwksServer, tmp_path: Path, deleter_first: bool
) -> None:
    gateway, sub = stack.gateway_url, f"hl-{uuid.uuid4().hex}"
    a_path, b_path = tmp_path / "device-a.sqlite", tmp_path / "device-b.sqlite"
    async with BookmarkClient(gateway, store_path=a_path) as a, BookmarkClient(gateway, store_path=b_path) as b:
        await a.sign_in_with_idp_a(identity(idp_a, sub))
        await b.sign_in_with_idp_a(identity(idp_a, sub))
        await a.put_bookmark("ferns", {"url": "https://example.com/hl/ferns", "title": "Ferns"})
        await a.put_bookmark("moss", {"url": "https://example.com/hl/moss", "title": "Mosses"})
        await a.put_highlight("h-ferns", {"bookmarkId": "ferns", "quote": "spores, not seeds", "note": "first"})
        await a.put_highlight("h-moss", {"bookmarkId": "moss", "quote": "no true roots"})
        assert (await a.flush()).rejected == []
        await b.sync()
        assert marks(await b.list_highlights()) == marks(await a.list_highlights())
        assert set(marks(await b.list_highlights())) == {"h-ferns", "h-moss"}

    # Both devices offline: A highlights and edits, on the bookmark B deletes and elsewhere; B deletes
    # "ferns", changes a note A recolours, and highlights too.
    nowhere = f"http://127.0.0.1:{free_port()}"
    async with BookmarkClient(nowhere, store_path=a_path) as a_offline:
        await a_offline.put_highlight("h-ferns", {"note": "edited on A"})
        await a_offline.put_highlight("h-ferns-2", {"bookmarkId": "ferns", "quote": "a second passage"})
        await a_offline.put_highlight("h-moss", {"color": "green"})
        # A bookmark saved offline and highlighted at once: the queue sends the bookmark first.
        await a_offline.put_bookmark("lichen", {"url": "https://example.com/hl/lichen"})
        await a_offline.put_highlight("h-lichen", {"bookmarkId": "lichen", "quote": "fungus and alga", "color": "blue"})
        with pytest.raises(Offline):
            await a_offline.flush(max_retries=0)
        assert [(op.kind, op.bookmark_id) for op in await a_offline.pending_operations()] == [
            ("highlight-put", "h-ferns"),
            ("highlight-put", "h-ferns-2"),
            ("highlight-put", "h-moss"),
            ("put", "lichen"),
            ("highlight-put", "h-lichen"),
        ]
        assert {h.id for h in await a_offline.list_highlights()} == {"h-ferns", "h-ferns-2", "h-moss", "h-lichen"}
    async with BookmarkClient(nowhere, store_path=b_path) as b_offline:
        await b_offline.delete_bookmark("ferns")
        await b_offline.put_highlight("h-moss", {"note": "B's note"})
        await b_offline.put_highlight("h-moss-2", {"bookmarkId": "moss", "quote": "they hold water", "color": "purple"})
        assert {h.id for h in await b_offline.list_highlights()} == {"h-moss", "h-moss-2"}  # ferns' went with it
        with pytest.raises(Offline):
            await b_offline.flush(max_retries=0)

    async with BookmarkClient(gateway, store_path=a_path) as a, BookmarkClient(gateway, store_path=b_path) as b:
        first, second = (b, a) if deleter_first else (a, b)
        flushed = [await first.flush(), await second.flush()]
        await first.sync()
        assert await a.pending_operations() == [] and await b.pending_operations() == []
        refused = sorted(r.bookmark_id for f in flushed for r in f.rejected)
        # Sent after the delete, A's writes on "ferns" are refused (and rolled back); sent before it, the
        # delete takes them along.
        assert refused == (["h-ferns", "h-ferns-2"] if deleter_first else [])

        server = await fresh_device(gateway, tmp_path / "device-c.sqlite", identity(idp_a, sub))
        assert marks(await a.list_highlights()) == server
        assert marks(await b.list_highlights()) == server
        assert {k: v[:4] for k, v in server.items()} == {
            "h-moss": ("moss", "no true roots", "green", "B's note"),  # A's colour and B's note both kept
            "h-moss-2": ("moss", "they hold water", "purple", ""),
            "h-lichen": ("lichen", "fungus and alga", "blue", ""),
        }
        for device in (a, b):
            gone = await device.get_highlight("h-ferns")
            assert gone is not None and gone.deleted


async def test_a_trash_restore_and_a_duplicates_merge_reach_another_device(
    stack: Any, idp_a: LocalJwksServer, tmp_path: Path
) -> None:
    gateway, sub = stack.gateway_url, f"hl-trash-{uuid.uuid4().hex}"
    async with (
        BookmarkClient(gateway, store_path=tmp_path / "a.sqlite") as a,
        BookmarkClient(gateway, store_path=tmp_path / "b.sqlite") as b,
    ):
        await a.sign_in_with_idp_a(identity(idp_a, sub))
        await b.sign_in_with_idp_a(identity(idp_a, sub))
        await a.put_bookmark("essay", {"url": "https://example.com/hl/essay", "title": "An essay"})
        await a.put_highlight("h1", {"bookmarkId": "essay", "quote": "the opening line", "note": "quote this"})
        await a.put_highlight("h2", {"bookmarkId": "essay", "quote": "the closing line", "color": "pink"})
        await a.flush()
        await b.sync()
        before = marks(await b.list_highlights())
        assert set(before) == {"h1", "h2"}

        await a.delete_bookmark("essay")
        await a.flush()
        result = await b.sync()
        assert sorted(result.changed_highlight_ids) == ["h1", "h2"] and await b.list_highlights() == []

        await a.restore_from_trash("essay")
        result = await b.sync()
        assert result.highlights == 2
        back = marks(await b.list_highlights("essay"))
        assert {k: v[:4] for k, v in back.items()} == {k: v[:4] for k, v in before.items()}
        await a.sync()
        assert marks(await a.list_highlights()) == back

        # A duplicates merge gives the kept bookmark the highlights of the merged one.
        await a.put_bookmark("essay-copy", {"url": "https://www.example.com/hl/essay?utm_source=x"})
        await a.put_highlight("h3", {"bookmarkId": "essay-copy", "quote": "a middle line"})
        await a.flush()
        await a.merge_duplicates("essay", ["essay-copy"])
        await b.sync()
        await a.sync()
        assert {h.id: h.bookmark_id for h in await b.list_highlights()} == {"h1": "essay", "h2": "essay", "h3": "essay"}
        assert marks(await a.list_highlights()) == marks(await b.list_highlights())


PAGE_TEXT = (
    "Ferns are vascular plants that reproduce by spores and have neither seeds nor flowers. "
    "Most ferns grow in damp, shaded places, from forest floors to the cracks of old walls."
)


@pytest.fixture(scope="module")
def tmux() -> Iterator[Tmux]:
    with tmux_server() as server:
        yield server


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


async def test_cli_highlights_of_a_captured_page(stack: Any, tmp_path: Path, tmux: Tmux) -> None:
    server, profile = stack.gateway_url, tmp_path / "cli.sqlite"
    ok(cli(profile, server, "login", "--anonymous"))
    ok(cli(profile, server, "settings", "--use-ai", "on"))
    url = f"https://ferns.invalid/guide/{uuid.uuid4().hex}"
    ok(cli(profile, server, "add", url, "--id", "ferns", "--title", "Field guide to ferns"))
    out = ok(cli(profile, server, "highlight", "ferns", "reproduce by spores", "--note", "see chapter 3", "--id", "h1"))
    assert out == "highlighted h1 in Field guide to ferns (yellow)\n"
    ok(cli(profile, server, "highlight", "ferns", "Ferns bloom every spring", "--color", "pink", "--id", "h2"))

    # The page as a browser saved it: the server reads its text and looks for each highlight in it.
    page = tmp_path / "ferns.html"
    page.write_text(
        f"<html><head><title>Field guide to ferns</title></head><body><article><p>{PAGE_TEXT}</p></article></body></html>"
    )
    ok(cli(profile, server, "capture", url, "--id", "ferns", "--file", str(page)))

    async def anchored() -> dict[str, Any] | None:
        ok(await asyncio.to_thread(cli, profile, server, "sync"))
        records = json.loads(ok(await asyncio.to_thread(cli, profile, server, "highlights", "--json")))
        found = {r["id"]: r["anchor"] for r in records}
        return found if None not in found.values() else None

    assert await eventually(anchored, timeout=120, interval=0.5) == {"h1": "exact", "h2": "orphan"}

    lines = ok(cli(profile, server, "highlights")).splitlines()
    assert lines == [
        "> Ferns bloom every spring",
        "  Field guide to ferns  [ferns] · pink · not found on the page any more · h2",
        "",
        "> reproduce by spores",
        "  note: see chapter 3",
        "  Field guide to ferns  [ferns] · yellow · on the page · h1",
    ]
    assert ok(cli(profile, server, "highlights", "ferns")).splitlines() == lines

    # In an 80-column terminal: a bar in each highlight's colour, lines within the width.
    screen = tmux.screen(cli_command(profile, server, "highlights"), width=80)
    assert screen[0] == "▌ Ferns bloom every spring"
    assert "not found on the page any more" in screen[1] and screen[4] == "  note: see chapter 3"
    assert all(tmux.cells(line) <= 80 for line in screen)
    coloured = "\n".join(tmux.screen(cli_command(profile, server, "highlights"), width=80, escapes=True))
    assert re.search(r"\x1b\[[0-9;]*m▌", coloured)

    ok(cli(profile, server, "highlight", "--delete", "h2"))
    ok(cli(profile, server, "delete", "ferns"))
    assert ok(cli(profile, server, "highlights")) == "no highlights\n"
    ok(cli(profile, server, "restore", "ferns"))
    assert [r["id"] for r in json.loads(ok(cli(profile, server, "highlights", "--json")))] == ["h1"]
