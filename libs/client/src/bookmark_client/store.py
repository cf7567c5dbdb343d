"""The on-disk profile: session, sync cursor, local bookmarks, collections and highlights, and the offline
write queue (SQLite).

Every change that must stay consistent is one SQLite transaction: a local write and its queue entry;
a delta page and the cursor after it; an accepted operation and the server copy it produced. A crash
between any two of those therefore never leaves a queue entry without its local effect, or a cursor
ahead of the records it covers.

Several processes may share one profile (``bookmarks watch`` in one terminal, ``bookmarks add`` in
another): the database runs in WAL mode with a generous busy timeout, and token refresh is serialized
across processes by :meth:`LocalStore.session_guard`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import aiosqlite

from bookmark_client.merge import (
    HIGHLIGHT_IDENTITY,
    apply_op,
    base_after_sent,
    base_from_collection_tombstone,
    base_from_highlight_tombstone,
    base_from_tombstone,
    base_from_upsert,
    materialize,
    now_iso,
)
from bookmark_client.models import (
    COLLECTION_KINDS,
    HIGHLIGHT_KINDS,
    Collection,
    OpKind,
    QueuedOp,
    RejectedOp,
    Session,
)
from bookmark_client.tree import check_parent

__all__ = ["DeltaChanges", "LocalStore", "SessionGuard"]

# 2: collections, userTags and isArchived; 3: highlights. A profile of an older version synced without
# them, so its cursor is dropped on upgrade: the next sync fetches everything again (queued writes are kept).
SCHEMA_VERSION = 3
# Long enough to wait out another process holding the write lock across a token refresh request.
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS bookmarks (
    id TEXT PRIMARY KEY,
    base TEXT,                          -- last copy the server sent (JSON); NULL: never seen by the server
    record TEXT NOT NULL,               -- what the user sees: base with queued ops replayed (JSON)
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ops (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- AUTOINCREMENT: seqs never reused, replay order is insert order
    kind TEXT NOT NULL,
    bookmark_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
CREATE INDEX IF NOT EXISTS ops_by_bookmark ON ops (bookmark_id, seq);
CREATE TABLE IF NOT EXISTS collections (
    id TEXT PRIMARY KEY,
    base TEXT,                          -- as for bookmarks
    record TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS highlights (
    id TEXT PRIMARY KEY,
    base TEXT,                          -- as for bookmarks
    record TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS rejected (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    bookmark_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    status INTEGER NOT NULL,
    code TEXT NOT NULL,
    message TEXT NOT NULL,
    rejected_at TEXT NOT NULL
);
"""

_META_SESSION = "session"
_META_OWNER = "owner"
_META_CURSOR = "cursor"
_META_VERSION = "schema_version"

_OP_COLUMNS = "seq, kind, bookmark_id, payload, created_at, attempts, last_error"


@dataclass(frozen=True)
class _Records:
    """The statements of one record table (bookmarks, collections or highlights) and the op kinds that write it.

    ``ops.bookmark_id`` holds the written record's id for every kind, so a bookmark, a collection and a
    highlight may share an id: every lookup of queued ops filters by kind.
    """

    table: str
    kinds: tuple[OpKind, ...]

    def _kinds_sql(self) -> str:
        return ", ".join(f"'{kind}'" for kind in self.kinds)

    @property
    def select_row(self) -> str:
        return f"SELECT base, record FROM {self.table} WHERE id = ?"  # noqa: S608 - fixed names

    @property
    def list_rows(self) -> str:
        # deleted <= 1 matches every row: one fixed statement for both cases.
        return f"SELECT id, record FROM {self.table} WHERE deleted <= ?"  # noqa: S608 - fixed names

    @property
    def upsert(self) -> str:
        return (
            f"INSERT INTO {self.table} (id, base, record, deleted) VALUES (?, ?, ?, ?) ON CONFLICT (id)"  # noqa: S608
            " DO UPDATE SET base = excluded.base, record = excluded.record, deleted = excluded.deleted"
        )

    @property
    def delete_row(self) -> str:
        return f"DELETE FROM {self.table} WHERE id = ?"  # noqa: S608 - fixed names

    @property
    def ops_for(self) -> str:
        return f"SELECT {_OP_COLUMNS} FROM ops WHERE bookmark_id = ? AND kind IN ({self._kinds_sql()}) ORDER BY seq"  # noqa: S608

    @property
    def pending_ids(self) -> str:
        return f"SELECT DISTINCT bookmark_id FROM ops WHERE kind IN ({self._kinds_sql()})"  # noqa: S608


_BOOKMARKS = _Records("bookmarks", ("put", "delete", "collections"))
_COLLECTIONS = _Records("collections", tuple(sorted(COLLECTION_KINDS)))
_HIGHLIGHTS = _Records("highlights", tuple(sorted(HIGHLIGHT_KINDS)))
_RECORD_TABLES = ("bookmarks", "collections", "highlights")


def _records_of(kind: OpKind) -> _Records:
    if kind in COLLECTION_KINDS:
        return _COLLECTIONS
    return _HIGHLIGHTS if kind in HIGHLIGHT_KINDS else _BOOKMARKS


@dataclass
class DeltaChanges:
    """Ids whose local view one delta page changed."""

    bookmarks: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    highlights: list[str] = field(default_factory=list)


def _op(row: Iterable[Any]) -> QueuedOp:
    seq, kind, bookmark_id, payload, created_at, attempts, last_error = row
    return QueuedOp(
        seq=int(seq),
        kind=cast(OpKind, kind),
        bookmark_id=str(bookmark_id),
        payload=json.loads(payload),
        created_at=str(created_at),
        attempts=int(attempts),
        last_error=last_error,
    )


def _prepare_path(path: str | Path) -> Path:
    resolved = Path(path).expanduser()
    resolved.parent.mkdir(parents=True, exist_ok=True)
    return resolved


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


async def _connect(path: Path) -> aiosqlite.Connection:
    # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE), never opened behind our back.
    db = await aiosqlite.connect(path, isolation_level=None)
    try:
        await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await db.execute("PRAGMA journal_mode = WAL")
    except BaseException:
        await db.close()
        raise
    return db


class SessionGuard:
    """Session access inside the cross-process refresh lock (see :meth:`LocalStore.session_guard`)."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db

    async def read(self) -> Session | None:
        async with self._db.execute("SELECT value FROM meta WHERE key = ?", (_META_SESSION,)) as cur:
            row = await cur.fetchone()
        return Session.model_validate_json(row[0]) if row else None

    async def write(self, session: Session | None) -> None:
        await _set_meta(self._db, _META_SESSION, session.model_dump_json(by_alias=True) if session else None)


async def _set_meta(db: aiosqlite.Connection, key: str, value: str | None) -> None:
    if value is None:
        await db.execute("DELETE FROM meta WHERE key = ?", (key,))
    else:
        await db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


async def _get_meta(db: aiosqlite.Connection, key: str) -> str | None:
    async with db.execute("SELECT value FROM meta WHERE key = ?", (key,)) as cur:
        row = await cur.fetchone()
    return str(row[0]) if row else None


class LocalStore:
    """Async access to one profile database. Open with :meth:`open`, close with :meth:`close`."""

    def __init__(self, path: Path, db: aiosqlite.Connection) -> None:
        self.path = path
        self._db = db
        # One connection, many coroutines: without this, one coroutine's BEGIN could land inside
        # another's open transaction.
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str | Path) -> LocalStore:
        path = await asyncio.to_thread(_prepare_path, path)
        db = await _connect(path)
        try:
            await db.executescript(_SCHEMA)
            version = await _get_meta(db, _META_VERSION)
            if version is not None and int(version) > SCHEMA_VERSION:
                raise RuntimeError(f"profile {path} was written by a newer client (schema {version})")
            if version is not None and int(version) < 3:
                await _set_meta(db, _META_CURSOR, None)  # resync: the old cursor skipped collections or highlights
            if version is None or int(version) < SCHEMA_VERSION:
                await _set_meta(db, _META_VERSION, str(SCHEMA_VERSION))
        except BaseException:
            await db.close()
            raise
        return cls(path, db)

    async def close(self) -> None:
        async with self._lock:
            await self._db.close()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            try:
                await self._db.execute("BEGIN IMMEDIATE")
                yield self._db
            except BaseException:
                # Also when cancelled while BEGIN was still waiting for aiosqlite's thread: it runs
                # statements in order, so BEGIN still happens and this ROLLBACK follows it.
                with contextlib.suppress(sqlite3.OperationalError):  # BEGIN itself failed: nothing to undo
                    await self._db.execute("ROLLBACK")
                raise
            await self._db.execute("COMMIT")

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            yield self._db

    # -- session ---------------------------------------------------------------------------------

    async def load_session(self) -> Session | None:
        async with self._read() as db:
            raw = await _get_meta(db, _META_SESSION)
        return Session.model_validate_json(raw) if raw else None

    async def owner(self) -> str | None:
        async with self._read() as db:
            return await _get_meta(db, _META_OWNER)

    async def store_sign_in(self, session: Session, *, keep_queue: bool) -> bool:
        """Save a new session; if it belongs to another user than the profile's data, reset that data.

        Returns whether the data was reset. ``keep_queue`` keeps queued writes across the switch (used
        when linking merged the old anonymous account into the new one, so the writes belong there).
        """
        async with self._write() as db:
            previous = await _get_meta(db, _META_OWNER)
            switched = previous is not None and previous != session.user.id
            if switched:
                await self._reset_data(db, keep_queue=keep_queue, owner=session.user.id)
            await _set_meta(db, _META_OWNER, session.user.id)
            await _set_meta(db, _META_SESSION, session.model_dump_json(by_alias=True))
        return switched

    async def clear_session(self) -> None:
        async with self._write() as db:
            await _set_meta(db, _META_SESSION, None)

    async def clear_all(self) -> None:
        """Forget everything: session, owner, cursor, records, queue and rejections (logout)."""
        async with self._write() as db:
            for table in ("meta", *_RECORD_TABLES, "ops", "rejected"):
                await db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
            await _set_meta(db, _META_VERSION, str(SCHEMA_VERSION))

    @asynccontextmanager
    async def session_guard(self) -> AsyncIterator[SessionGuard]:
        """Exclusive access to the stored session across processes, for a token refresh.

        Refresh tokens are single-use and presenting a used one revokes the whole family
        (docs/api-guide.md, section 2), so two refreshes with the same token — from two tasks or two processes on
        one profile — would sign the user out. A separate connection takes SQLite's write lock (BEGIN IMMEDIATE) for
        the duration: the second refresher waits, then reads the already rotated session.
        """
        db = await _connect(self.path)
        try:
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield SessionGuard(db)
            except BaseException:
                await db.execute("ROLLBACK")
                raise
            await db.execute("COMMIT")
        finally:
            await db.close()

    # -- cursor ----------------------------------------------------------------------------------

    async def cursor(self) -> str | None:
        async with self._read() as db:
            return await _get_meta(db, _META_CURSOR)

    async def set_cursor(self, cursor: str | None) -> None:
        async with self._write() as db:
            await _set_meta(db, _META_CURSOR, cursor)

    # -- local writes ----------------------------------------------------------------------------

    async def queue_put(self, bookmark_id: str, fields: Mapping[str, Any]) -> QueuedOp:
        async with self._write() as db:
            base, record = await self._row(db, _BOOKMARKS, bookmark_id)
            payload_fields = dict(fields)
            is_new = record is None or not record.get("url")
            if "url" not in payload_fields:
                # PUT requires url even for a partial update: resend the one we know.
                if is_new or record is None:
                    raise ValueError(f"bookmark {bookmark_id!r} is unknown locally: url is required")
                payload_fields["url"] = record["url"]
            if is_new and "clientSavedAt" not in payload_fields:
                payload_fields["clientSavedAt"] = now_iso()
            return await self._queue(db, "put", bookmark_id, {"fields": payload_fields}, base, record)

    async def queue_delete(self, bookmark_id: str) -> QueuedOp:
        async with self._write() as db:
            base, record = await self._row(db, _BOOKMARKS, bookmark_id)
            return await self._queue(db, "delete", bookmark_id, {}, base, record)

    async def queue_collections(self, bookmark_id: str, collection_ids: list[str]) -> QueuedOp:
        async with self._write() as db:
            base, record = await self._row(db, _BOOKMARKS, bookmark_id)
            if record is None or record.get("deleted"):
                # The server answers 404 for an unknown bookmark; refuse now rather than queue a sure rejection.
                raise LookupError(f"bookmark {bookmark_id!r} does not exist locally")
            return await self._queue(db, "collections", bookmark_id, {"collectionIds": collection_ids}, base, record)

    async def queue_collection_put(self, collection_id: str, fields: Mapping[str, Any]) -> QueuedOp:
        """Queue ``PUT /v1/collections/{id}`` (create, rename and/or move; ``fields`` in wire form).

        ``name`` is required for a collection this profile does not know (or knows as deleted) and
        resent otherwise. A ``parentId`` that breaks the tree rules in the local view is refused here.
        """
        async with self._write() as db:
            base, record = await self._row(db, _COLLECTIONS, collection_id)
            payload_fields = dict(fields)
            is_new = record is None or bool(record.get("deleted"))
            if "name" not in payload_fields:
                if is_new or record is None:
                    raise ValueError(f"collection {collection_id!r} is unknown locally: a name is required")
                payload_fields["name"] = record["name"]
            if is_new or "parentId" in payload_fields:
                parent = payload_fields.get("parentId")
                check_parent(await self._collections(db, include_deleted=True), collection_id, parent)
            return await self._queue(db, "collection-put", collection_id, {"fields": payload_fields}, base, record)

    async def queue_collection_delete(self, collection_id: str) -> QueuedOp:
        async with self._write() as db:
            base, record = await self._row(db, _COLLECTIONS, collection_id)
            return await self._queue(db, "collection-delete", collection_id, {}, base, record)

    async def queue_highlight_put(self, highlight_id: str, fields: Mapping[str, Any]) -> QueuedOp:
        """Queue ``PUT /v1/highlights/{id}`` (create, or change ``color``/``note``; ``fields`` in wire form).

        A new highlight (or one known as deleted) needs ``bookmarkId`` and ``quote``; a known one resends
        them, ``prefix`` and ``suffix`` (none of which may differ) and its offsets. The bookmark must be live
        here: the server refuses a highlight of any other, and the queue sends the bookmark's own queued
        PUT first.
        """
        async with self._write() as db:
            base, record = await self._row(db, _HIGHLIGHTS, highlight_id)
            payload_fields = dict(fields)
            if record is not None and not record.get("deleted"):
                for name in HIGHLIGHT_IDENTITY:
                    if name in payload_fields and payload_fields[name] != record.get(name):
                        raise ValueError(f"{name} of highlight {highlight_id!r} cannot change after it is created")
                    payload_fields[name] = record.get(name) or ""
                if record.get("start") is not None and "start" not in payload_fields:
                    payload_fields |= {"start": record["start"], "end": record["end"]}
            elif "bookmarkId" not in payload_fields or "quote" not in payload_fields:
                raise ValueError(f"highlight {highlight_id!r} is unknown here: bookmarkId and quote are required")
            elif record is not None and record.get("bookmarkId") not in (None, "", payload_fields["bookmarkId"]):
                raise ValueError(f"bookmarkId of highlight {highlight_id!r} cannot change after it is created")
            bookmark_id = str(payload_fields["bookmarkId"])
            _, bookmark = await self._row(db, _BOOKMARKS, bookmark_id)
            if bookmark is None or bookmark.get("deleted"):
                raise LookupError(f"bookmark {bookmark_id!r} does not exist here")
            return await self._queue(db, "highlight-put", highlight_id, {"fields": payload_fields}, base, record)

    async def queue_highlight_delete(self, highlight_id: str) -> QueuedOp:
        async with self._write() as db:
            base, record = await self._row(db, _HIGHLIGHTS, highlight_id)
            return await self._queue(db, "highlight-delete", highlight_id, {}, base, record)

    async def _queue(
        self,
        db: aiosqlite.Connection,
        kind: OpKind,
        record_id: str,
        payload: dict[str, Any],
        base: dict[str, Any] | None,
        record: dict[str, Any] | None,
    ) -> QueuedOp:
        created_at = now_iso()
        cur = await db.execute(
            "INSERT INTO ops (kind, bookmark_id, payload, created_at) VALUES (?, ?, ?, ?)",
            (kind, record_id, _dumps(payload), created_at),
        )
        assert cur.lastrowid is not None
        op = QueuedOp(seq=cur.lastrowid, kind=kind, bookmark_id=record_id, payload=payload, created_at=created_at)
        owner = await _get_meta(db, _META_OWNER)
        await self._save_row(db, _records_of(kind), record_id, base, apply_op(record, op, owner=owner))
        return op

    # -- queue -----------------------------------------------------------------------------------

    async def next_op(self) -> QueuedOp | None:
        async with self._read() as db:
            async with db.execute(f"SELECT {_OP_COLUMNS} FROM ops ORDER BY seq LIMIT 1") as cur:  # noqa: S608
                row = await cur.fetchone()
        return _op(row) if row else None

    async def pending_ops(self) -> list[QueuedOp]:
        async with self._read() as db:
            async with db.execute(f"SELECT {_OP_COLUMNS} FROM ops ORDER BY seq") as cur:  # noqa: S608
                return [_op(row) for row in await cur.fetchall()]

    async def pending_count(self) -> int:
        async with self._read() as db:
            async with db.execute("SELECT count(*) FROM ops") as cur:
                row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def record_attempt(self, seq: int, error: str) -> None:
        async with self._write() as db:
            await db.execute("UPDATE ops SET attempts = attempts + 1, last_error = ? WHERE seq = ?", (error, seq))

    async def complete_op(self, op: QueuedOp, response: Mapping[str, Any] | None) -> None:
        """``op`` was accepted: drop it and take the server's resulting copy as the new base."""
        async with self._write() as db:
            await db.execute("DELETE FROM ops WHERE seq = ?", (op.seq,))
            records = _records_of(op.kind)
            base, _ = await self._row(db, records, op.bookmark_id)
            await self._rematerialize(db, records, op.bookmark_id, base_after_sent(base, op, response))

    async def reject_op(self, op: QueuedOp, *, status: int, code: str, message: str) -> RejectedOp:
        """``op`` was refused for good: drop it, keep a record, and roll its local effect back."""
        rejected = RejectedOp(
            seq=op.seq,
            kind=op.kind,
            bookmark_id=op.bookmark_id,
            payload=op.payload,
            status=status,
            code=code,
            message=message,
            rejected_at=now_iso(),
        )
        async with self._write() as db:
            await db.execute("DELETE FROM ops WHERE seq = ?", (op.seq,))
            await db.execute(
                "INSERT OR REPLACE INTO rejected (seq, kind, bookmark_id, payload, status, code, message, rejected_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (op.seq, op.kind, op.bookmark_id, _dumps(op.payload), status, code, message, rejected.rejected_at),
            )
            records = _records_of(op.kind)
            base, _ = await self._row(db, records, op.bookmark_id)
            await self._rematerialize(db, records, op.bookmark_id, base)
        return rejected

    async def rejected_ops(self) -> list[RejectedOp]:
        async with self._read() as db:
            async with db.execute(
                "SELECT seq, kind, bookmark_id, payload, status, code, message, rejected_at FROM rejected ORDER BY seq"
            ) as cur:
                rows = await cur.fetchall()
        return [
            RejectedOp(
                seq=int(seq),
                kind=cast(OpKind, kind),
                bookmark_id=str(bid),
                payload=json.loads(payload),
                status=int(status),
                code=str(code),
                message=str(message),
                rejected_at=str(at),
            )
            for seq, kind, bid, payload, status, code, message, at in rows
        ]

    # -- delta -----------------------------------------------------------------------------------

    async def apply_delta_page(
        self,
        upserts: Sequence[Mapping[str, Any]],
        tombstones: Sequence[Mapping[str, Any]],
        *,
        cursor: str | None,
        collections: Sequence[Mapping[str, Any]] = (),
        collection_tombstones: Sequence[Mapping[str, Any]] = (),
        highlights: Sequence[Mapping[str, Any]] = (),
        highlight_tombstones: Sequence[Mapping[str, Any]] = (),
    ) -> DeltaChanges:
        """Apply one delta page and store ``cursor`` in the same transaction; returns ids whose view changed."""
        changes = DeltaChanges()
        async with self._write() as db:
            # Collections first: a bookmark of this page may be filed into one of them; highlights last:
            # they belong to bookmarks.
            kinds = (
                (_COLLECTIONS, "id", collections, collection_tombstones, changes.collections),
                (_BOOKMARKS, "clientBookmarkId", upserts, tombstones, changes.bookmarks),
                (_HIGHLIGHTS, "id", highlights, highlight_tombstones, changes.highlights),
            )
            for table, id_key, upserted, deleted, changed in kinds:
                for server in upserted:
                    record_id = str(server[id_key])
                    if await self._rematerialize(db, table, record_id, base_from_upsert(server)):
                        changed.append(record_id)
                for tombstone in deleted:
                    record_id = str(tombstone[id_key])
                    if await self._apply_tombstone(db, table, record_id, tombstone):
                        changed.append(record_id)
            await _set_meta(db, _META_CURSOR, cursor)
        return changes

    async def _apply_tombstone(
        self, db: aiosqlite.Connection, records: _Records, record_id: str, tombstone: Mapping[str, Any]
    ) -> bool:
        base, record = await self._row(db, records, record_id)
        if base is None and record is None:
            return False  # never seen here: nothing to delete, nothing to show
        if records is _COLLECTIONS:
            return await self._rematerialize(db, records, record_id, base_from_collection_tombstone(base, tombstone))
        if records is _HIGHLIGHTS:
            return await self._rematerialize(db, records, record_id, base_from_highlight_tombstone(base, tombstone))
        return await self._rematerialize(db, records, record_id, base_from_tombstone(base, tombstone))

    # -- reads -----------------------------------------------------------------------------------

    async def get_bookmark(self, bookmark_id: str) -> dict[str, Any] | None:
        return await self._get(_BOOKMARKS, bookmark_id)

    async def list_bookmarks(self, *, include_deleted: bool = False) -> list[dict[str, Any]]:
        async with self._read() as db:
            records = await self._list(db, _BOOKMARKS, include_deleted=include_deleted)
        # Newest first, as a bookmark list is usually shown.
        records.sort(key=lambda r: (r.get("clientSavedAt") or r.get("createdAt") or "", r["clientBookmarkId"]))
        records.reverse()
        return records

    async def get_collection(self, collection_id: str) -> dict[str, Any] | None:
        return await self._get(_COLLECTIONS, collection_id)

    async def list_collections(self, *, include_deleted: bool = False) -> list[dict[str, Any]]:
        async with self._read() as db:
            records = await self._list(db, _COLLECTIONS, include_deleted=include_deleted)
        records.sort(key=lambda r: (str(r.get("name") or "").casefold(), r["id"]))
        return records

    async def get_highlight(self, highlight_id: str) -> dict[str, Any] | None:
        async with self._read() as db:
            found = await self._highlights(db, highlight_id=highlight_id)
        return found[0] if found else None

    async def list_highlights(
        self, *, bookmark_id: str | None = None, include_deleted: bool = False
    ) -> list[dict[str, Any]]:
        """Newest first; a highlight of a bookmark deleted here reads as deleted with it."""
        async with self._read() as db:
            records = await self._highlights(db)
        records = [
            r
            for r in records
            if (include_deleted or not r.get("deleted")) and (bookmark_id is None or r.get("bookmarkId") == bookmark_id)
        ]
        records.sort(key=lambda r: (r.get("createdAt") or "", r["id"]), reverse=True)
        return records

    async def _highlights(self, db: aiosqlite.Connection, *, highlight_id: str | None = None) -> list[dict[str, Any]]:
        if highlight_id is None:
            records = await self._list(db, _HIGHLIGHTS, include_deleted=True)
        else:
            _, record = await self._row(db, _HIGHLIGHTS, highlight_id)
            if record is None:
                return []
            records = [{**record, "pending": highlight_id in await self._pending_ids(db, _HIGHLIGHTS)}]
        # The server deletes a bookmark's highlights with it: show that at once for a delete made here.
        async with db.execute("SELECT id, json_extract(record, '$.deletedAt') FROM bookmarks WHERE deleted = 1") as cur:
            gone = {str(bid): deleted_at for bid, deleted_at in await cur.fetchall()}
        return [
            {**r, "deleted": True, "deletedAt": gone[r["bookmarkId"]]}
            if not r.get("deleted") and r.get("bookmarkId") in gone
            else r
            for r in records
        ]

    async def _get(self, records: _Records, record_id: str) -> dict[str, Any] | None:
        async with self._read() as db:
            _, record = await self._row(db, records, record_id)
            if record is None:
                return None
            pending = await self._pending_ids(db, records)
        return {**record, "pending": record_id in pending}

    async def _list(
        self, db: aiosqlite.Connection, records: _Records, *, include_deleted: bool
    ) -> list[dict[str, Any]]:
        async with db.execute(records.list_rows, (int(include_deleted),)) as cur:
            rows = await cur.fetchall()
        pending = await self._pending_ids(db, records)
        return [{**json.loads(record), "pending": rid in pending} for rid, record in rows]

    async def _collections(self, db: aiosqlite.Connection, *, include_deleted: bool) -> list[Collection]:
        return [
            Collection.model_validate(r) for r in await self._list(db, _COLLECTIONS, include_deleted=include_deleted)
        ]

    # -- internals -------------------------------------------------------------------------------

    @staticmethod
    async def _pending_ids(db: aiosqlite.Connection, records: _Records) -> set[str]:
        async with db.execute(records.pending_ids) as cur:
            return {str(row[0]) for row in await cur.fetchall()}

    @staticmethod
    async def _row(
        db: aiosqlite.Connection, records: _Records, record_id: str
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        async with db.execute(records.select_row, (record_id,)) as cur:
            row = await cur.fetchone()
        if row is None:
            return None, None
        return (json.loads(row[0]) if row[0] is not None else None), json.loads(row[1])

    @staticmethod
    async def _ops_for(db: aiosqlite.Connection, records: _Records, record_id: str) -> list[QueuedOp]:
        async with db.execute(records.ops_for, (record_id,)) as cur:
            return [_op(row) for row in await cur.fetchall()]

    async def _rematerialize(
        self, db: aiosqlite.Connection, records: _Records, record_id: str, base: dict[str, Any] | None
    ) -> bool:
        """Store ``base`` and the view recomputed from it plus the queued ops; True if the view changed."""
        _, old = await self._row(db, records, record_id)
        owner = await _get_meta(db, _META_OWNER)
        record = materialize(base, await self._ops_for(db, records, record_id), owner=owner)
        await self._save_row(db, records, record_id, base, record)
        return record != old

    @staticmethod
    async def _save_row(
        db: aiosqlite.Connection,
        records: _Records,
        record_id: str,
        base: dict[str, Any] | None,
        record: dict[str, Any] | None,
    ) -> None:
        if record is None:
            await db.execute(records.delete_row, (record_id,))
            return
        await db.execute(
            records.upsert,
            (record_id, _dumps(base) if base is not None else None, _dumps(record), int(bool(record.get("deleted")))),
        )

    async def _reset_data(self, db: aiosqlite.Connection, *, keep_queue: bool, owner: str) -> None:
        for table in _RECORD_TABLES:
            await db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
        await _set_meta(db, _META_CURSOR, None)
        if not keep_queue:
            await db.execute("DELETE FROM ops")
            return
        # The queued writes are all that is left of the old view: rebuild it from them alone.
        by_record: dict[tuple[_Records, str], list[QueuedOp]] = defaultdict(list)
        async with db.execute(f"SELECT {_OP_COLUMNS} FROM ops ORDER BY seq") as cur:  # noqa: S608
            for row in await cur.fetchall():
                op = _op(row)
                by_record[(_records_of(op.kind), op.bookmark_id)].append(op)
        for (records, record_id), ops in by_record.items():
            await self._save_row(db, records, record_id, None, materialize(None, ops, owner=owner))
