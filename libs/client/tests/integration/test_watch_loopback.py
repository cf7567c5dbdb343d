"""``watch()`` against a real WebSocket server on loopback (HTTP side: the in-memory fake service).

Covers what the full stack cannot provoke on demand: a 4401 close mid-session, and a session that
cannot be refreshed any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from client_fakes import FakeServer
from websockets.asyncio.server import ServerConnection, serve

from bookmark_client import Backoff, BookmarkClient, SessionExpired

NUDGE = '{"type": "bookmarks_changed"}'


async def test_watch_syncs_on_nudges_and_survives_token_expiry(tmp_path: Path) -> None:
    fake = FakeServer()
    tokens: list[str] = []
    connections: asyncio.Queue[ServerConnection] = asyncio.Queue()

    async def handler(ws: ServerConnection) -> None:
        token = parse_qs(urlsplit(ws.request.path if ws.request else "").query).get("access_token", [""])[0]
        if token not in fake.access:
            await ws.close(4401, "unauthorized")
            return
        tokens.append(token)
        await connections.put(ws)
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        client = BookmarkClient(
            f"http://127.0.0.1:{port}",
            store_path=tmp_path / "watch.sqlite",
            transport=fake.transport(),
            backoff=Backoff(base=0.01, maximum=0.05),
            rng=random.Random(3),
        )
        async with client:
            await client.sign_in_anonymously()
            assert client.user is not None
            user_id = client.user.id
            fake.server_write(user_id, "before", url="https://e.com/before")
            await client.put_bookmark("queued", {"url": "https://e.com/queued"})  # flushed on connect

            changes: asyncio.Queue[list[str]] = asyncio.Queue()
            collection_changes: asyncio.Queue[list[str]] = asyncio.Queue()
            highlight_changes: asyncio.Queue[list[str]] = asyncio.Queue()
            nudges: asyncio.Queue[None] = asyncio.Queue()
            task = asyncio.create_task(
                client.watch(
                    changes.put_nowait,
                    on_nudge=lambda: nudges.put_nowait(None),
                    on_collection_change=collection_changes.put_nowait,
                    on_highlight_change=highlight_changes.put_nowait,
                )
            )
            try:
                first = await asyncio.wait_for(connections.get(), 30)
                # Connecting flushes the queue and catches up on what happened while disconnected.
                assert await asyncio.wait_for(changes.get(), 30) == ["before"]
                assert "queued" in fake.visible(user_id)
                assert await client.pending_operations() == []

                fake.server_write(user_id, "nudged", url="https://e.com/nudged")
                await first.send(NUDGE)
                await asyncio.wait_for(nudges.get(), 30)
                assert await asyncio.wait_for(changes.get(), 30) == ["nudged"]

                # A collection changed elsewhere travels the same way (same nudge, same delta stream).
                fake.server_collection(user_id, "col", name="Elsewhere")
                await first.send(NUDGE)
                assert await asyncio.wait_for(collection_changes.get(), 30) == ["col"]
                collection = await client.get_collection("col")
                assert collection is not None and collection.name == "Elsewhere"
                assert changes.empty()

                # And a highlight made elsewhere.
                fake.server_highlight(user_id, "mark", bookmarkId="nudged", quote="a passage", note="from elsewhere")
                await first.send(NUDGE)
                assert await asyncio.wait_for(highlight_changes.get(), 30) == ["mark"]
                highlight = await client.get_highlight("mark")
                assert highlight is not None and highlight.note == "from elsewhere"
                assert changes.empty() and collection_changes.empty()

                # The token expires: the server closes with 4401, the client refreshes and reconnects.
                fake.expire_all_access_tokens()
                await first.close(4401, "token expired")
                await asyncio.wait_for(connections.get(), 30)
                assert fake.refresh_calls == 1
                assert len(tokens) == 2 and tokens[0] != tokens[1]

                # The session is revoked: the next 4401 cannot be cured; watch() gives up with SessionExpired.
                fake.revoked_families.update(r.family for r in fake.refresh_tokens.values())
                fake.expire_all_access_tokens()
                second = server.connections.copy().pop()
                await second.close(4401, "token expired")
                with pytest.raises(SessionExpired):
                    await asyncio.wait_for(task, 30)
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, SessionExpired):
                    await task
