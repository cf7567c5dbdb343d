"""``BookmarkClient``: what a device app embeds to talk to the bookmark service.

Reads come from the local profile; writes land there at once and are queued for the server. The
network side has three entry points, all safe to call at any time:

- :meth:`BookmarkClient.flush` replays queued writes in order, then runs a delta sync;
- :meth:`BookmarkClient.sync` pulls the server's changes (cursor-based delta, docs/api-guide.md "GET
  /bookmarks/delta" rule 5);
- :meth:`BookmarkClient.watch` keeps a WebSocket open and syncs on every ``bookmarks_changed`` nudge.

Flush and sync take turns on one lock, so a delta page fetched before one of our writes reached the
server is never applied after that write's answer.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import logging
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Final, Self, cast
from urllib.parse import quote

import httpx
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from bookmark_client.backoff import Backoff, default_rng
from bookmark_client.errors import ApiError, BookmarkClientError, Offline, PendingChanges, SessionExpired
from bookmark_client.merge import (
    collection_ids,
    normalize_collection_fields,
    normalize_fields,
    normalize_highlight_fields,
    now_iso,
    validate_bookmark_id,
    validate_collection_id,
    validate_highlight_id,
)
from bookmark_client.models import (
    Bookmark,
    Collection,
    DuplicatePage,
    EnqueueResult,
    EnrichmentJob,
    FlushResult,
    Highlight,
    ImportRecord,
    LinkPreview,
    PageProgress,
    PairingCode,
    QueuedOp,
    RejectedOp,
    SearchPage,
    Session,
    SyncResult,
    TrashPage,
    User,
    UserSettings,
)
from bookmark_client.realtime import CLOSE_UNAUTHORIZED, Coalescer, events_url, is_nudge
from bookmark_client.session import SessionManager
from bookmark_client.store import LocalStore

__all__ = ["MAX_RESTORED_PER_CALL", "BookmarkClient", "ChangeCallback", "EventCallback"]

log = logging.getLogger("bookmark_client")

ChangeCallback = Callable[[list[str]], Awaitable[None] | None]
EventCallback = Callable[[], Awaitable[None] | None]
ErrorCallback = Callable[[BaseException], Awaitable[None] | None]
Sleep = Callable[[float], Awaitable[None]]
UploadCallback = Callable[[int, int], None]

DEFAULT_TIMEOUT = httpx.Timeout(15.0, connect=5.0)
# An export may take a while in total; only the wait for each next piece is bounded.
EXPORT_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
# Retry statuses: the request may succeed later unchanged. Other 4xx will never succeed (rejected).
_TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
# A socket that stayed open this long was healthy: its loss starts the reconnect backoff from scratch.
_STABLE_CONNECTION_SECONDS = 30.0
# The most bookmarks one ``POST /v1/trash/restore`` brings back.
MAX_RESTORED_PER_CALL: Final = 10_000


async def _call(callback: Callable[..., Awaitable[None] | None] | None, *args: Any) -> None:
    if callback is None:
        return
    result = callback(*args)
    if inspect.isawaitable(result):
        await result


class BookmarkClient:
    """Async client bound to one server and one local profile (an SQLite file).

    Use as ``async with BookmarkClient(url, store_path=path) as client: ...`` (or ``await open()`` /
    ``await close()``). ``transport``, ``sleep`` and ``rng`` exist for tests.
    """

    def __init__(
        self,
        base_url: str,
        *,
        store_path: str | Path,
        page_size: int = 200,
        backoff: Backoff | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not 1 <= page_size <= 1000:
            raise ValueError("page_size must be within 1..1000")
        self.base_url = base_url.rstrip("/")
        self.store_path = Path(store_path).expanduser()
        self.page_size = page_size
        self.backoff = backoff or Backoff()
        self._timeout = timeout
        self._transport = transport
        self._sleep = sleep
        self._rng = rng or default_rng()
        self._store_: LocalStore | None = None
        self._http_: httpx.AsyncClient | None = None
        self._sessions_: SessionManager | None = None
        self._state_lock = asyncio.Lock()
        self._flush_lock = asyncio.Lock()

    # -- lifecycle -------------------------------------------------------------------------------

    async def open(self) -> Self:
        if self._store_ is not None:
            return self
        store = await LocalStore.open(self.store_path)
        self._http_ = httpx.AsyncClient(base_url=self.base_url, timeout=self._timeout, transport=self._transport)
        self._store_ = store
        self._sessions_ = SessionManager(store, self._http_)
        try:
            await self._sessions_.load()
        except BaseException:
            # Cancelled (Ctrl-C) or failed: ``async with`` calls no __aexit__ after a failed __aenter__, and
            # the profile's open connection keeps a non-daemon thread that would hold the process at exit.
            await self.close()
            raise
        return self

    async def close(self) -> None:
        if self._sessions_ is not None:
            await self._sessions_.settle()
        if self._http_ is not None:
            await self._http_.aclose()
        if self._store_ is not None:
            await self._store_.close()
        self._store_ = self._http_ = self._sessions_ = None

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def _store(self) -> LocalStore:
        if self._store_ is None:
            raise RuntimeError("BookmarkClient is not open: use `async with` or `await client.open()`")
        return self._store_

    @property
    def _http(self) -> httpx.AsyncClient:
        if self._http_ is None:
            raise RuntimeError("BookmarkClient is not open: use `async with` or `await client.open()`")
        return self._http_

    @property
    def _sessions(self) -> SessionManager:
        if self._sessions_ is None:
            raise RuntimeError("BookmarkClient is not open: use `async with` or `await client.open()`")
        return self._sessions_

    # -- session ---------------------------------------------------------------------------------

    @property
    def user(self) -> User | None:
        """The signed-in user as of the last sign-in or refresh, or None."""
        session = self._sessions.session
        return session.user if session else None

    @property
    def refresh_count(self) -> int:
        """Token refreshes this client performed (each one rotates the refresh token)."""
        return self._sessions.refresh_count

    async def sign_in_anonymously(self) -> User:
        response = await self._request("POST", "/v1/auth/anonymous", auth=False)
        return await self._adopt(response, keep_queue=False)

    async def sign_in_with_idp_a(self, id_token: str, *, link: bool = False) -> User:
        """Sign in with (or, ``link=True``, attach to the current user) an identity-provider-A token.

        Linking an identity that already has an account signs into that account and merges this
        anonymous account's bookmarks into it (docs/api-guide.md, section 2); queued writes follow the merge.
        """
        if link:
            response = await self._request("POST", "/v1/auth/oauth/idp-a", json={"idToken": id_token, "link": True})
        else:
            response = await self._request("POST", "/v1/auth/oauth/idp-a", json={"idToken": id_token}, auth=False)
        return await self._adopt(response, keep_queue=link)

    async def create_pairing_code(self) -> PairingCode:
        """A single-use code (5 minutes) that signs another device into this account (online only)."""
        response = await self._request("POST", "/v1/auth/pairing")
        return PairingCode.model_validate(_unwrap(response))

    async def claim_pairing_code(self, code: str) -> User:
        """Sign this device into the account that issued ``code`` (``XXXX-XXXX``; dash, spaces and case do
        not matter), with a session of its own. Like any sign-in as another user, it resets this profile."""
        response = await self._request("POST", "/v1/auth/pairing/claim", json={"code": code}, auth=False)
        return await self._adopt(response, keep_queue=False)

    async def _adopt(self, response: httpx.Response, *, keep_queue: bool) -> User:
        session = Session.model_validate(response.json())
        if await self._sessions.adopt(session, keep_queue=keep_queue):
            log.info("profile switched to user %s; local data reset", session.user.id)
        return session.user

    async def refresh_session(self) -> User:
        """Rotate the tokens now (normally automatic)."""
        session = await self._sessions.current()
        return (await self._sessions.refresh(session.access_token)).user

    async def export(self, fmt: str) -> AsyncIterator[bytes]:
        """The server's export of the whole library (``netscape``, ``json`` or ``csv``), as it arrives.

        Nothing is buffered here; a 401 before the first byte refreshes the session once. A stream cut
        off midway raises :class:`Offline` (the bytes already yielded are an incomplete file).
        """
        token = await self._sessions.access_token()
        for attempt in (1, 2):
            request = self._http.build_request(
                "GET",
                "/v1/exports",
                params={"format": fmt},
                headers={"Authorization": f"Bearer {token}"},
                timeout=EXPORT_TIMEOUT,
            )
            try:
                response = await self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                raise Offline(f"Cannot reach {self.base_url}: {exc or type(exc).__name__}") from exc
            try:
                if response.is_error:
                    await response.aread()
                    error = ApiError.from_response(response)
                    if attempt == 1 and response.status_code == 401 and error.code in ("unauthorized", "http-401"):
                        token = (await self._sessions.refresh(token)).access_token
                        continue
                    raise error
                async for chunk in response.aiter_bytes():
                    yield chunk
                return
            except httpx.TransportError as exc:
                raise Offline(f"The export from {self.base_url} was cut off: {exc or type(exc).__name__}") from exc
            finally:
                await response.aclose()

    async def me(self) -> User:
        response = await self._request("GET", "/v1/me")
        return User.model_validate(response.json())

    async def logout(self, *, discard_pending: bool = False) -> bool:
        """Revoke the refresh token and wipe the profile. Returns whether the server confirmed revocation.

        Queued writes are flushed first; if some cannot be sent, :class:`PendingChanges` is raised and
        nothing is wiped, unless ``discard_pending`` is true.
        """
        if not discard_pending and await self._store.pending_count():
            try:
                await self.flush(sync=False, max_retries=0)
            except BookmarkClientError as exc:
                log.info("flush before logout failed: %s", exc)
            remaining = await self._store.pending_count()
            if remaining:
                raise PendingChanges(remaining)
        session = self._sessions.session or await self._store.load_session()
        revoked = False
        if session is not None:
            try:
                await self._request("POST", "/v1/auth/logout", json={"refreshToken": session.refresh_token}, auth=False)
                revoked = True
            except BookmarkClientError as exc:
                # Local sign-out must work offline; the token then simply expires on the server.
                log.info("server-side logout failed: %s", exc)
        await self._store.clear_all()
        await self._sessions.load()
        return revoked

    # -- local reads and writes ------------------------------------------------------------------

    async def get_bookmark(self, bookmark_id: str) -> Bookmark | None:
        record = await self._store.get_bookmark(bookmark_id)
        return Bookmark.model_validate(record) if record is not None else None

    async def list_bookmarks(self, *, include_deleted: bool = False) -> list[Bookmark]:
        return [Bookmark.model_validate(r) for r in await self._store.list_bookmarks(include_deleted=include_deleted)]

    async def put_bookmark(self, bookmark_id: str, fields: Mapping[str, Any]) -> Bookmark:
        """Create or update a bookmark locally and queue the PUT. ``fields``: wire or snake_case names.

        ``url`` is required for a bookmark this profile does not know; ``clientSavedAt`` defaults to now
        for a new one.
        """
        validate_bookmark_id(bookmark_id)
        await self._store.queue_put(bookmark_id, normalize_fields(fields))
        return await self._require(bookmark_id)

    async def delete_bookmark(self, bookmark_id: str) -> None:
        """Delete locally at once and queue the DELETE (idempotent: unknown ids are fine)."""
        validate_bookmark_id(bookmark_id)
        await self._store.queue_delete(bookmark_id)

    async def set_collections(self, bookmark_id: str, ids: list[str]) -> Bookmark:
        """Replace the bookmark's collection memberships locally and queue the change."""
        validate_bookmark_id(bookmark_id)
        await self._store.queue_collections(bookmark_id, collection_ids(ids))
        return await self._require(bookmark_id)

    async def tag_bookmark(self, bookmark_id: str, *, add: Sequence[str] = (), remove: Sequence[str] = ()) -> Bookmark:
        """Add and/or remove user tags (case-insensitively) and queue the new ``userTags``.

        The whole list is written: like every client field, ``userTags`` is last-write-wins on the server.
        """
        bookmark = await self._require(bookmark_id)
        if bookmark.deleted:
            raise LookupError(f"bookmark {bookmark_id!r} is deleted")
        drop = {tag.strip().casefold() for tag in remove}
        tags = [tag for tag in [*bookmark.user_tags, *add] if tag.strip().casefold() not in drop]
        return await self.put_bookmark(bookmark_id, {"userTags": tags})

    async def archive_bookmark(self, bookmark_id: str, *, archived: bool = True) -> Bookmark:
        """Set the read-later "archived" state and queue the change."""
        bookmark = await self._require(bookmark_id)
        if bookmark.deleted:
            raise LookupError(f"bookmark {bookmark_id!r} is deleted")
        return await self.put_bookmark(bookmark_id, {"isArchived": archived})

    # -- collections -----------------------------------------------------------------------------

    async def get_collection(self, collection_id: str) -> Collection | None:
        record = await self._store.get_collection(collection_id)
        return Collection.model_validate(record) if record is not None else None

    async def list_collections(self, *, include_deleted: bool = False) -> list[Collection]:
        """The local collections, by name (:func:`bookmark_client.tree.walk` orders them as a tree)."""
        records = await self._store.list_collections(include_deleted=include_deleted)
        return [Collection.model_validate(r) for r in records]

    async def put_collection(self, collection_id: str, fields: Mapping[str, Any]) -> Collection:
        """Create, rename or move a collection locally and queue the PUT (``name``, ``parentId``; snake_case
        accepted). ``name`` is required for a new collection; an absent ``parentId`` keeps the current one."""
        validate_collection_id(collection_id)
        await self._store.queue_collection_put(collection_id, normalize_collection_fields(fields))
        collection = await self.get_collection(collection_id)
        assert collection is not None
        return collection

    async def delete_collection(self, collection_id: str) -> None:
        """Delete locally at once and queue the DELETE (idempotent). The server moves its children up and
        removes its id from bookmarks; those changes arrive with the next sync."""
        validate_collection_id(collection_id)
        await self._store.queue_collection_delete(collection_id)

    # -- highlights ------------------------------------------------------------------------------

    async def get_highlight(self, highlight_id: str) -> Highlight | None:
        record = await self._store.get_highlight(highlight_id)
        return Highlight.model_validate(record) if record is not None else None

    async def list_highlights(
        self, bookmark_id: str | None = None, *, include_deleted: bool = False
    ) -> list[Highlight]:
        """The local highlights, newest first: all of them, or those of one bookmark. A highlight of a bookmark
        deleted here counts as deleted (the server deletes them together, and a trash restore brings both back)."""
        records = await self._store.list_highlights(bookmark_id=bookmark_id, include_deleted=include_deleted)
        return [Highlight.model_validate(r) for r in records]

    async def put_highlight(self, highlight_id: str, fields: Mapping[str, Any]) -> Highlight:
        """Create a highlight, or change its ``color`` or ``note``, locally, and queue the PUT (wire or
        snake_case names). A new one needs ``bookmarkId`` (a live bookmark here: one saved offline is sent
        first) and ``quote``; ``prefix``, ``suffix``, ``start`` and ``end`` help the server find it on the
        page. Those never change after creation (a different value raises ``ValueError``)."""
        validate_highlight_id(highlight_id)
        await self._store.queue_highlight_put(highlight_id, normalize_highlight_fields(fields))
        highlight = await self.get_highlight(highlight_id)
        assert highlight is not None
        return highlight

    async def delete_highlight(self, highlight_id: str) -> None:
        """Delete locally at once and queue the DELETE (idempotent: unknown ids are fine)."""
        validate_highlight_id(highlight_id)
        await self._store.queue_highlight_delete(highlight_id)

    async def pending_operations(self) -> list[QueuedOp]:
        return await self._store.pending_ops()

    async def rejected_operations(self) -> list[RejectedOp]:
        return await self._store.rejected_ops()

    async def _require(self, bookmark_id: str) -> Bookmark:
        bookmark = await self.get_bookmark(bookmark_id)
        if bookmark is None:
            raise LookupError(f"bookmark {bookmark_id!r} does not exist locally")
        return bookmark

    # -- offline queue ---------------------------------------------------------------------------

    async def flush(
        self,
        *,
        sync: bool = True,
        max_retries: int = 5,
        max_retry_after: float = 60.0,
        on_sent: Callable[[int], None] | None = None,
    ) -> FlushResult:
        """Send queued writes in order, then (``sync``) run a delta sync.

        Per operation: network errors, 408/429/5xx are retried up to ``max_retries`` times with
        exponential backoff and jitter (a ``Retry-After`` is honoured); then :class:`Offline` or the
        :class:`ApiError` is raised and the operation stays queued for the next flush. Any other 4xx
        drops the operation and records it (:meth:`rejected_operations`); the local copy falls back to
        the server's. 401 after one token refresh (or :class:`SessionExpired`) stops the flush.
        A ``Retry-After`` above ``max_retry_after`` seconds stops the flush at once rather than block.
        ``on_sent`` is called with the number of operations done (sent or rejected) after each one.
        """
        result = FlushResult()
        async with self._flush_lock:
            while (op := await self._store.next_op()) is not None:
                rejected = await self._send_with_retries(op, max_retries=max_retries, max_retry_after=max_retry_after)
                if rejected is None:
                    result.sent += 1
                else:
                    result.rejected.append(rejected)
                if on_sent is not None:
                    on_sent(result.sent + len(result.rejected))
        if sync:
            result.sync = await self.sync()
        return result

    async def _send_with_retries(self, op: QueuedOp, *, max_retries: int, max_retry_after: float) -> RejectedOp | None:
        failures = 0
        while True:
            try:
                async with self._state_lock:
                    response = await self._send_op(op)
                    await self._store.complete_op(op, response)
                return None
            except Offline:
                failures += 1
                await self._store.record_attempt(op.seq, "offline")
                if failures > max_retries:
                    raise
                await self._sleep(self.backoff.delay(failures, self._rng))
            except SessionExpired:
                raise
            except ApiError as exc:
                if exc.status in _TRANSIENT_STATUSES:
                    failures += 1
                    await self._store.record_attempt(op.seq, f"{exc.status} {exc.code}")
                    delay = exc.retry_after if exc.retry_after is not None else self.backoff.delay(failures, self._rng)
                    if failures > max_retries or delay > max_retry_after:
                        raise
                    await self._sleep(delay)
                elif exc.status == 401 or not 400 <= exc.status < 500:
                    raise
                else:
                    return await self._store.reject_op(op, status=exc.status, code=exc.code, message=exc.message)

    async def _send_op(self, op: QueuedOp) -> dict[str, Any] | None:
        path = f"/v1/bookmarks/{op.bookmark_id}"
        if op.kind in ("collection-put", "collection-delete"):
            path = f"/v1/collections/{op.bookmark_id}"
        if op.kind in ("highlight-put", "highlight-delete"):
            path = f"/v1/highlights/{op.bookmark_id}"
        if op.kind in ("put", "collection-put", "highlight-put"):
            response = await self._request("PUT", path, json=op.payload["fields"])
            data = response.json().get("data")
            return data if isinstance(data, dict) else None
        if op.kind in ("delete", "collection-delete", "highlight-delete"):
            await self._request("DELETE", path)
            return None
        await self._request("PUT", f"{path}/collections", json={"collectionIds": op.payload["collectionIds"]})
        return None

    # -- delta sync ------------------------------------------------------------------------------

    async def sync(self, *, on_page: Callable[[PageProgress], None] | None = None) -> SyncResult:
        """Pull server changes since the stored cursor and apply them locally.

        Follows ``nextCursor`` until it is null. Each page and the cursor after it are stored together;
        at the end the cursor of the last request is kept (docs/api-guide.md, section 4: the next sync replays that
        page, harmless, then continues). ``invalid-cursor`` → forget the cursor and resync from scratch.
        """
        started = time.monotonic()
        result = SyncResult()
        async with self._state_lock:
            cursor = await self._store.cursor()
            while True:
                try:
                    page = await self._delta_page(cursor)
                except ApiError as exc:
                    if exc.code != "invalid-cursor" or cursor is None or result.full_resync:
                        raise
                    log.warning("server rejected the stored cursor; resyncing from scratch")
                    result.full_resync = True
                    cursor = None
                    continue
                next_cursor = page.get("nextCursor")
                progress = await self._apply_page(page, next_cursor if next_cursor is not None else cursor, result)
                if on_page is not None:
                    on_page(progress)
                if next_cursor is None:
                    break
                cursor = next_cursor
        result.elapsed = time.monotonic() - started
        return result

    async def _apply_page(self, page: Mapping[str, Any], cursor: str | None, result: SyncResult) -> PageProgress:
        """Store one delta page (and the cursor to resume from) and add it to ``result``."""
        upserts = list(page.get("upserts") or [])
        tombstones = list(page.get("tombstones") or [])
        collections = list(page.get("collections") or [])
        collection_tombstones = list(page.get("collectionTombstones") or [])
        highlights = list(page.get("highlights") or [])
        highlight_tombstones = list(page.get("highlightTombstones") or [])
        changes = await self._store.apply_delta_page(
            upserts,
            tombstones,
            cursor=cursor,
            collections=collections,
            collection_tombstones=collection_tombstones,
            highlights=highlights,
            highlight_tombstones=highlight_tombstones,
        )
        result.pages += 1
        result.upserts += len(upserts)
        result.tombstones += len(tombstones)
        result.collections += len(collections)
        result.collection_tombstones += len(collection_tombstones)
        result.highlights += len(highlights)
        result.highlight_tombstones += len(highlight_tombstones)
        _extend_unique(result.changed_ids, changes.bookmarks)
        _extend_unique(result.changed_collection_ids, changes.collections)
        _extend_unique(result.changed_highlight_ids, changes.highlights)
        return PageProgress(
            result.pages,
            len(upserts),
            len(tombstones),
            len(changes.bookmarks) + len(changes.collections) + len(changes.highlights),
            collections=len(collections),
            collection_tombstones=len(collection_tombstones),
            highlights=len(highlights),
            highlight_tombstones=len(highlight_tombstones),
        )

    async def _delta_page(self, cursor: str | None) -> dict[str, Any]:
        params: dict[str, str | int] = {"limit": self.page_size}
        if cursor is not None:
            params["cursor"] = cursor
        response = await self._request("GET", "/v1/bookmarks/delta", params=params)
        data = response.json().get("data")
        if not isinstance(data, dict):
            raise ApiError(response.status_code, "invalid-response", "delta response has no data object")
        return data

    # -- real-time -------------------------------------------------------------------------------

    async def watch(
        self,
        on_change: ChangeCallback | None = None,
        *,
        on_nudge: EventCallback | None = None,
        on_connect: EventCallback | None = None,
        on_error: ErrorCallback | None = None,
        on_collection_change: ChangeCallback | None = None,
        on_highlight_change: ChangeCallback | None = None,
    ) -> None:
        """Listen for ``bookmarks_changed`` nudges and sync on each, until cancelled.

        On every (re)connect, queued writes are flushed and a sync runs (nudges sent while offline are
        lost). Syncs are coalesced: nudges during a sync schedule exactly one more. ``on_change`` gets
        the ids of bookmarks whose local view changed, ``on_collection_change`` those of collections,
        ``on_highlight_change`` those of highlights.
        Connection failures are retried forever with exponential backoff and jitter (reported to
        ``on_error``); close code 4401 refreshes the token and
        reconnects. Returns only by cancellation; raises :class:`SessionExpired` when the session is
        gone, or whatever a callback raised.
        """
        fatal: list[BaseException] = []
        sockets: list[ClientConnection] = []

        async def catch_up() -> None:
            try:
                if await self._store.pending_count():
                    try:
                        await self.flush(sync=False, max_retries=0)
                    except (Offline, ApiError) as exc:
                        if isinstance(exc, SessionExpired):
                            raise
                        await _call(on_error, exc)
                result = await self.sync()
                if result.changed_collection_ids:
                    await _call(on_collection_change, result.changed_collection_ids)
                if result.changed_ids:
                    await _call(on_change, result.changed_ids)
                if result.changed_highlight_ids:
                    await _call(on_highlight_change, result.changed_highlight_ids)
            except (Offline, ApiError) as exc:
                if not isinstance(exc, SessionExpired):
                    await _call(on_error, exc)
                    return
                fatal.append(exc)
            except Exception as exc:  # a callback's bug: stop watching and surface it
                fatal.append(exc)
            if fatal:
                # Wake the receive loop so watch() can raise now rather than at the next disconnect.
                for ws in sockets:
                    await ws.close()

        coalescer = Coalescer(catch_up)
        attempt = 0
        auth_failures = 0
        try:
            while True:
                if fatal:
                    raise fatal[0]
                token: str | None = None
                close_code: int | None = None
                healthy = False
                try:
                    token = await self._sessions.access_token()
                    async with ws_connect(events_url(self.base_url, token), open_timeout=10) as ws:
                        opened = time.monotonic()
                        sockets.append(ws)
                        try:
                            await _call(on_connect)
                            # Nudges sent while we were away are lost: catch up (flush + sync) now.
                            coalescer.request()
                            async for message in ws:
                                healthy = True
                                if is_nudge(message):
                                    await _call(on_nudge)
                                    coalescer.request()
                        except ConnectionClosed:
                            pass
                        finally:
                            sockets.remove(ws)
                        close_code = ws.close_code
                        healthy = healthy or time.monotonic() - opened >= _STABLE_CONNECTION_SECONDS
                except InvalidStatus as exc:
                    # A refused handshake (rather than a 4401 close) means the same for our purposes.
                    if exc.response.status_code in (401, 403):
                        close_code = CLOSE_UNAUTHORIZED
                    else:
                        await _call(on_error, exc)
                except (OSError, TimeoutError, WebSocketException, Offline) as exc:
                    await _call(on_error, exc)
                if fatal:
                    raise fatal[0]
                if healthy:
                    attempt = 0
                    auth_failures = 0
                if close_code == CLOSE_UNAUTHORIZED and token is not None:
                    auth_failures += 1
                    try:
                        await self._sessions.refresh(token)
                    except Offline as exc:
                        await _call(on_error, exc)
                    else:
                        if auth_failures == 1:
                            # An expired token is routine: reconnect at once with the fresh one. Only a
                            # fresh token refused again waits, so a misbehaving server is not hammered.
                            continue
                attempt += 1
                await self._sleep(self.backoff.delay(attempt, self._rng))
        finally:
            await coalescer.aclose()

    # -- search ----------------------------------------------------------------------------------

    async def search(self, query: str, *, limit: int = 20, cursor: str | None = None) -> SearchPage:
        """One page of ``GET /v1/bookmarks/search`` (online only; the query language is in
        docs/api-guide.md, section 12). Pass ``page.next_cursor`` back with the same ``query`` for the next page."""
        params: dict[str, str | int] = {"q": query, "limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        response = await self._request("GET", "/v1/bookmarks/search", params=params)
        return SearchPage.model_validate(_unwrap(response))

    async def lookup(self, url: str) -> Bookmark | None:
        """The server's live bookmark of ``url`` (any spelling of it), or None when the user has none.

        Online only: it asks the server, so a bookmark saved on another device a moment ago is found."""
        try:
            response = await self._request("GET", "/v1/bookmarks/lookup", params={"url": url})
        except ApiError as exc:
            if exc.status == 404 and exc.code == "not-found":
                return None
            raise
        return Bookmark.model_validate(_unwrap(response))

    # -- trash -----------------------------------------------------------------------------------

    async def list_trash(self, *, limit: int = 50, cursor: str | None = None) -> TrashPage:
        """One page of ``GET /v1/trash`` (online only): deleted bookmarks that can still be restored, most
        recently deleted first. ``limit`` 1-100; pass ``page.next_cursor`` back for the next page."""
        if not 1 <= limit <= 100:
            raise ValueError("limit must be between 1 and 100")
        params: dict[str, str | int] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        response = await self._request("GET", "/v1/trash", params=params)
        return TrashPage.model_validate(_unwrap(response))

    async def restore_from_trash(self, bookmark_id: str) -> Bookmark:
        """Bring one bookmark back as it was when deleted (``POST /v1/trash/{id}/restore``); the server's copy.

        It reaches this profile (and every device) as an ordinary upsert: run :meth:`sync` to have it here.
        Raises :class:`ApiError` ``not-found`` (404) when it is not in the trash."""
        validate_bookmark_id(bookmark_id)
        response = await self._request("POST", f"/v1/trash/{quote(bookmark_id, safe='')}/restore")
        return Bookmark.model_validate(_unwrap(response))

    async def restore_deleted_since(self, since: datetime | str) -> int:
        """Restore everything deleted at or after ``since`` (``POST /v1/trash/restore``); how many came back.

        The server restores at most :data:`MAX_RESTORED_PER_CALL` per call: a call that returns that many
        may have left more, which the next call brings back. A naive ``datetime`` is taken as UTC."""
        if isinstance(since, datetime):
            since = (since if since.tzinfo is not None else since.replace(tzinfo=UTC)).isoformat()
        response = await self._request("POST", "/v1/trash/restore", json={"deletedSince": since})
        return int(_unwrap(response)["restored"])

    async def purge_from_trash(self, bookmark_id: str) -> None:
        """Delete one bookmark of the trash for good (``DELETE /v1/trash/{id}``; idempotent)."""
        validate_bookmark_id(bookmark_id)
        await self._request("DELETE", f"/v1/trash/{quote(bookmark_id, safe='')}")

    async def empty_trash(self) -> None:
        """Delete everything in the trash for good (``DELETE /v1/trash``)."""
        await self._request("DELETE", "/v1/trash")

    # -- duplicates ------------------------------------------------------------------------------

    async def list_duplicates(self, *, limit: int = 20, cursor: str | None = None) -> DuplicatePage:
        """One page of ``GET /v1/duplicates`` (online only): groups of live bookmarks sharing a normalized
        URL, each oldest save first, the group with the newest member first. ``limit`` 1-100; pass
        ``page.next_cursor`` back for the next page."""
        if not 1 <= limit <= 100:
            raise ValueError("limit must be between 1 and 100")
        params: dict[str, str | int] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        response = await self._request("GET", "/v1/duplicates", params=params)
        return DuplicatePage.model_validate(_unwrap(response))

    async def merge_duplicates(self, keep: str, merge: Sequence[str]) -> Bookmark:
        """Merge duplicates into ``keep`` (``POST /v1/duplicates/merge``); the kept bookmark as the server has it.

        ``keep`` receives the others' tags, collections and notes; the ``merge`` ones (1-100) go to the trash
        with ``merged_into`` naming ``keep``, and :meth:`restore_from_trash` on them undoes the merge. Run
        :meth:`sync` to have the change here. Raises :class:`ApiError` ``invalid-request`` (400) when an id is
        not a live bookmark, ``keep`` is among ``merge``, or one is not a duplicate of ``keep``."""
        ids = list(dict.fromkeys(merge))
        if not 1 <= len(ids) <= 100:
            raise ValueError("merge between 1 and 100 bookmarks")
        for bookmark_id in (keep, *ids):
            validate_bookmark_id(bookmark_id)
        response = await self._request("POST", "/v1/duplicates/merge", json={"keep": keep, "merge": ids})
        return Bookmark.model_validate(_unwrap(response))

    # -- enrichment and settings -----------------------------------------------------------------

    async def preview(self, url: str) -> LinkPreview:
        """The page's title, description and picture (``GET /v1/previews``): no AI, no quota, online only."""
        response = await self._request("GET", "/v1/previews", params={"url": url})
        return LinkPreview.model_validate(_unwrap(response))

    async def capture(self, bookmark_id: str, html: str, *, title: str | None = None) -> EnqueueResult:
        """Enrich a bookmark from its page as a browser rendered it (``POST /v1/enrichment/capture``): the
        server never fetches the URL, and the result stays private. Needs ``useAi`` consent; ``html`` at
        most 10 MiB of UTF-8. The bookmark may still be waiting in the queue: its URL is taken from here."""
        validate_bookmark_id(bookmark_id)
        bookmark = await self._require(bookmark_id)
        if bookmark.deleted:
            raise LookupError(f"bookmark {bookmark_id!r} is deleted")
        body: dict[str, Any] = {"clientBookmarkId": bookmark_id, "url": bookmark.url, "html": html}
        if title is not None:
            body["title"] = title
        response = await self._request("POST", "/v1/enrichment/capture", json=body)
        return EnqueueResult.model_validate(_unwrap(response))

    async def enrich(self, bookmark_id: str) -> EnqueueResult:
        """Queue AI enrichment of a bookmark (with its url and clientSavedAt). Needs ``useAi`` consent."""
        validate_bookmark_id(bookmark_id)
        bookmark = await self._require(bookmark_id)
        if bookmark.deleted:
            raise LookupError(f"bookmark {bookmark_id!r} is deleted")
        body = {
            "clientBookmarkId": bookmark_id,
            "url": bookmark.url,
            "clientSavedAt": bookmark.client_saved_at or bookmark.created_at or now_iso(),
        }
        response = await self._request("POST", "/v1/enrichment/enqueue", json=body)
        return EnqueueResult.model_validate(_unwrap(response))

    async def check_link(self, bookmark_id: str) -> None:
        """Ask the server to check the bookmark's link soon (``POST /v1/bookmarks/{id}/check-link``, online
        only; at most 10 per minute). The result (``link_status``...) arrives with a later sync."""
        validate_bookmark_id(bookmark_id)
        await self._request("POST", f"/v1/bookmarks/{quote(bookmark_id, safe='')}/check-link")

    async def enrichment_status(self, bookmark_id: str) -> EnrichmentJob:
        validate_bookmark_id(bookmark_id)
        response = await self._request("GET", "/v1/enrichment/status", params={"clientBookmarkId": bookmark_id})
        return EnrichmentJob.model_validate(_unwrap(response))

    async def start_import(
        self, path: str | Path, fmt: str = "auto", *, on_upload: UploadCallback | None = None
    ) -> ImportRecord:
        """Upload an export file (``POST /v1/imports``, streamed from disk); the queued Import record.

        ``on_upload(sent, total)`` is called as the file's bytes are read into the request (a retried
        request starts again from 0)."""
        with open(path, "rb") as fp:  # noqa: ASYNC230 - httpx streams the file in chunks
            source: BinaryIO = fp if on_upload is None else cast(BinaryIO, CountingReader(fp, on_upload))
            upload = Upload(file=source, filename=Path(path).name, fields=(("format", fmt),))
            response = await self._request("POST", "/v1/imports", upload=upload)
        return ImportRecord.model_validate(_unwrap(response))

    async def import_status(self, import_id: str) -> ImportRecord:
        response = await self._request("GET", f"/v1/imports/{quote(import_id, safe='')}")
        return ImportRecord.model_validate(_unwrap(response))

    async def get_settings(self) -> UserSettings:
        return UserSettings.model_validate(_unwrap(await self._request("GET", "/v1/me/settings")))

    async def update_settings(self, *, use_ai: bool) -> UserSettings:
        response = await self._request("PATCH", "/v1/me/settings", json={"useAi": use_ai})
        return UserSettings.model_validate(_unwrap(response))

    # -- HTTP ------------------------------------------------------------------------------------

    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str | int] | None = None,
        auth: bool = True,
        upload: Upload | None = None,
    ) -> httpx.Response:
        """One API call. With ``auth``: a 401 ``unauthorized`` triggers one token refresh and one retry.

        ``upload``: a multipart body (form fields and one file, streamed from disk, rewound per try)."""
        if not auth:
            return _checked(await self._send(method, path, json=json, params=params, token=None, upload=upload))
        token = await self._sessions.access_token()
        response = await self._send(method, path, json=json, params=params, token=token, upload=upload)
        if response.status_code == 401 and ApiError.from_response(response).code in ("unauthorized", "http-401"):
            session = await self._sessions.refresh(token)
            response = await self._send(
                method, path, json=json, params=params, token=session.access_token, upload=upload
            )
        return _checked(response)

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any,
        params: Mapping[str, str | int] | None,
        token: str | None,
        upload: Upload | None = None,
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else None
        files, data = (None, None)
        if upload is not None:
            upload.file.seek(0)
            files, data = {"file": (upload.filename, upload.file)}, dict(upload.fields)
        try:
            return await self._http.request(
                method, path, json=json, params=params, headers=headers, files=files, data=data
            )
        except httpx.TransportError as exc:
            raise Offline(f"Cannot reach {self.base_url}: {exc or type(exc).__name__}") from exc


class CountingReader(io.RawIOBase):
    """A file read through for an upload, reporting the bytes read so far and the file's size."""

    def __init__(self, raw: BinaryIO, callback: UploadCallback) -> None:
        super().__init__()
        self._raw, self._callback = raw, callback
        self._size = os.fstat(raw.fileno()).st_size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def tell(self) -> int:
        return self._raw.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        position = self._raw.seek(offset, whence)
        self._callback(position, self._size)
        return position

    def read(self, size: int = -1) -> bytes:
        chunk = self._raw.read(size)
        self._callback(self._raw.tell(), self._size)
        return chunk


@dataclass(frozen=True)
class Upload:
    """A multipart body: one file part named ``file`` and plain form fields."""

    file: BinaryIO
    filename: str
    fields: tuple[tuple[str, str], ...] = ()


def _extend_unique(target: list[str], ids: list[str]) -> None:
    known = set(target)
    for item in ids:
        if item not in known:
            known.add(item)
            target.append(item)


def _checked(response: httpx.Response) -> httpx.Response:
    if response.is_error:
        raise ApiError.from_response(response)
    return response


def _unwrap(response: httpx.Response) -> Any:
    # Some endpoints answer {data: {...}}, others the object itself (spec); accept both.
    body = response.json()
    if isinstance(body, dict) and isinstance(body.get("data"), dict) and len(body) == 1:
        return body["data"]
    return body
