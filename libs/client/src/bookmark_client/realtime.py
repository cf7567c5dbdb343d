"""Pieces of the real-time listener that do not need a socket: the events URL and sync coalescing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode, urlsplit, urlunsplit

__all__ = ["CLOSE_UNAUTHORIZED", "Coalescer", "events_url", "is_nudge"]

log = logging.getLogger("bookmark_client.realtime")

# docs/api-guide.md, section 8: bad or expired token.
CLOSE_UNAUTHORIZED = 4401


def events_url(base_url: str, access_token: str) -> str:
    """``ws(s)://host[/prefix]/v1/events?access_token=...`` for an ``http(s)://`` base URL."""
    parts = urlsplit(base_url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme.lower())
    if scheme is None:
        raise ValueError(f"unsupported base URL scheme: {base_url!r}")
    path = parts.path.rstrip("/") + "/v1/events"
    return urlunsplit((scheme, parts.netloc, path, urlencode({"access_token": access_token}), ""))


def is_nudge(message: str | bytes) -> bool:
    try:
        payload = json.loads(message)
    except ValueError:
        return False
    return isinstance(payload, dict) and payload.get("type") == "bookmarks_changed"


class Coalescer:
    """Runs ``job`` when requested; requests made while it runs collapse into exactly one more run.

    A nudge says "something changed", not what: ten nudges during a sync are answered by one more
    sync, which sees all ten changes. One more is still needed, because a change that arrived after
    the running sync read its last page would otherwise wait for the next nudge.
    """

    def __init__(self, job: Callable[[], Awaitable[None]]) -> None:
        self._job = job
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self.runs = 0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def request(self) -> None:
        if self.running:
            self._again = True
            return
        self._again = False
        self._task = asyncio.create_task(self._loop(), name="bookmark-client-sync")

    async def _loop(self) -> None:
        while True:
            self._again = False
            self.runs += 1
            try:
                await self._job()
            except Exception:
                # The job reports its own expected failures; this only keeps a bug from going unseen.
                log.exception("coalesced job failed")
            if not self._again:
                return

    async def wait_idle(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
