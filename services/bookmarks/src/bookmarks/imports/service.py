"""The import job (docs/api-guide.md, section 13): claimed under a lease, run in batches, resumable after a crash.

A background loop of the bookmarks process (``run_import_worker``) claims a queued import (or one whose
worker's lease ran out) with ``FOR UPDATE SKIP LOCKED``, copies the stored upload to a local temporary
file and feeds the parsers. Each batch of items is ONE transaction: it locks the import row (and checks
the lease is still ours), writes the bookmarks and new collections through the domain rules, the report
rows, the outbox events and the checkpoint (``next_ordinal``) with the counters. A worker killed at any
point leaves the last committed batch as the checkpoint, so the next claim resumes exactly there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import islice
from typing import IO, Any, BinaryIO, Final, cast

from sqlalchemy import RowMapping
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain import collections as collection_rules
from bookmarks.domain.collections import Collection, CollectionWrite, NestingError
from bookmarks.domain.model import Bookmark
from bookmarks.highlights import rules as highlight_rules
from bookmarks.highlights import store as highlights_store
from bookmarks.highlights.anchoring import anchor
from bookmarks.highlights.service import highlight_event
from bookmarks.imports import rules, store
from bookmarks.imports.formats import (
    ImportFormatError,
    ImportItem,
    count_items,
    iter_items,
    json_collections,
    resolve_format,
)
from bookmarks.imports.formats.model import ImportHighlight
from bookmarks.service import import_saved_event, new_collection_event
from bookmarks.store import repository
from common.db import SessionFactory, transaction
from common.events import Event
from common.outages import is_outage
from common.outbox import add_events
from common.retry import Backoff
from common.tasks import wait_for_event

log = logging.getLogger("bookmarks.imports.service")

# A file that kills its worker again and again (a parser bug, OOM) fails instead of looping forever.
MAX_CLAIMS: Final = 5
_CRASHED: Final = "The import stopped unexpectedly several times; try splitting the file."
_PLACEHOLDER: Final = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class JobConfig:
    worker_id: str
    lease_seconds: float = 60.0
    batch_size: int = 2500


class LeaseLost(Exception):
    """Another worker owns the import now (ours expired): stop without writing anything more."""


# --- the routes' use cases: the upload, the import's state, its report ---------------------------------


async def create_import(
    sessions: SessionFactory, *, owner: uuid.UUID, fmt: str, upload: IO[bytes], size: int
) -> RowMapping:
    """The queued import row and its stored upload, in one transaction (the worker claims it)."""
    async with transaction(sessions) as session:
        return await store.create_import(
            session, import_id=uuid.uuid4(), owner=owner, fmt=fmt, upload=upload, size=size
        )


async def find_import(sessions: SessionFactory, owner: uuid.UUID, import_id: uuid.UUID) -> RowMapping | None:
    """The owner's import ``import_id``; None when there is none (or it is another user's)."""
    async with sessions() as session:
        return await store.find_import(session, owner, import_id)


async def report_pages(sessions: SessionFactory, import_id: uuid.UUID, size: int) -> AsyncIterator[list[RowMapping]]:
    """The import's report rows in file order, ``size`` at a time, each page read in a session of its own."""
    after = -1
    while True:
        async with sessions() as session:
            rows = await store.report_page(session, import_id, after, size)
        if not rows:
            return
        yield rows
        after = rows[-1]["ordinal"]


# --- one batch --------------------------------------------------------------------------------------


@dataclass
class _Batch:
    """The state of one batch transaction while its items are applied in file order."""

    owner: uuid.UUID
    by_url: dict[str, Bookmark]
    collection_ids: dict[tuple[str | None, str], str]
    live_parents: dict[str, str | None]
    new_collections: list[Collection] = field(default_factory=list)
    dirty: dict[str, tuple[Bookmark, bool]] = field(default_factory=dict)  # id → (record, created)
    outcomes: list[tuple[ImportItem, rules.Applied]] = field(default_factory=list)
    # Highlights: ids already written (deleted ones too), live passages and counts per bookmark, the
    # user's live count, and what this batch adds: (bookmark id, highlight id, highlight).
    highlight_ids: set[str] = field(default_factory=set)
    live_passages: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)
    user_highlights: int = 0
    new_highlights: list[tuple[str, str, ImportHighlight]] = field(default_factory=list)

    def _fresh_highlights(self, target: str, item: ImportItem) -> list[tuple[str, ImportHighlight]]:
        """The item's highlights ``target`` does not have yet (by id or by passage), once each."""
        passages = self.live_passages.get(target, set())
        fresh: dict[str, ImportHighlight] = {}
        for h in item.highlights:
            hid = rules.imported_highlight_id(target, h)
            if hid not in self.highlight_ids and rules.highlight_key(h) not in passages:
                fresh.setdefault(hid, h)
        return list(fresh.items())

    def _add_highlights(self, target: str, fresh: list[tuple[str, ImportHighlight]]) -> None:
        for hid, h in fresh:
            self.highlight_ids.add(hid)
            self.live_passages.setdefault(target, set()).add(rules.highlight_key(h))
            self.new_highlights.append((target, hid, h))
        self.user_highlights += len(fresh)

    def collection_for(self, path: tuple[str, ...]) -> str | None:
        """The id of the collection at ``path``, creating the missing levels (None if refused by E2)."""
        parent, depth = rules.path_lookup(self.collection_ids, path)
        for name in path[depth:]:
            collection_id = str(uuid.uuid4())
            write = CollectionWrite(name=name, parent_id=parent)
            try:
                record = collection_rules.write_collection(
                    None,
                    self.live_parents,
                    owner=self.owner,
                    collection_id=collection_id,
                    write=write,
                    position=_PLACEHOLDER,
                )
            except NestingError:
                return None
            assert record is not None
            self.new_collections.append(record)
            self.live_parents[collection_id] = parent
            self.collection_ids[rules.collection_key(parent, name)] = collection_id
            parent = collection_id
        return parent

    def apply(self, item: ImportItem) -> None:
        existing = self.by_url.get(item.normalized_url) if item.normalized_url else None
        new_id = str(uuid.uuid4())
        target = existing.client_bookmark_id if existing is not None else new_id
        fresh = self._fresh_highlights(target, item) if item.valid else []
        if fresh:
            on_bookmark = len(self.live_passages.get(target, ()))
            if (reason := rules.highlight_limit(on_bookmark, self.user_highlights, len(fresh))) is not None:
                item, fresh = replace(item, reason=reason), []
        paths = item.collection_paths if item.valid else ()  # an invalid item creates no folder
        ids = tuple(c for p in paths if p and (c := self.collection_for(p)) is not None)
        applied = rules.apply_item(
            existing, item, owner=self.owner, collection_ids=ids, new_id=new_id, position=_PLACEHOLDER
        )
        if fresh:
            self._add_highlights(target, fresh)
            if applied.outcome == "unchanged":  # new highlights on a bookmark that is otherwise the same
                applied = rules.Applied("updated", applied.record)
        self.outcomes.append((item, applied))
        if applied.record is None or applied.record is existing:
            return
        record = applied.record
        created = self.dirty.get(record.client_bookmark_id, (record, applied.outcome == "created"))[1]
        self.dirty[record.client_bookmark_id] = (record, created)
        self.by_url[record.normalized_url] = record


async def _load_batch(session: AsyncSession, owner: uuid.UUID, items: list[ImportItem]) -> _Batch:
    urls = [i.normalized_url for i in items if i.normalized_url]
    live = await store.live_collections(session, owner)
    batch = _Batch(
        owner=owner,
        by_url=await store.live_by_normalized_url(session, owner, urls) if urls else {},
        collection_ids={rules.collection_key(c.parent_id, c.name): c.collection_id for c in live},
        live_parents={c.collection_id: c.parent_id for c in live},
    )
    if any(i.highlights for i in items):
        targets = [b.client_bookmark_id for b in batch.by_url.values()]
        for h in await highlights_store.known_on(session, owner, targets):
            batch.highlight_ids.add(h.highlight_id)
            if not h.is_deleted:
                batch.live_passages.setdefault(h.client_bookmark_id, set()).add(rules.highlight_key(h))
        batch.user_highlights = await highlights_store.live_count(session, owner)
    return batch


async def _store_batch(session: AsyncSession, batch: _Batch) -> list[Event]:
    """Give every new collection, changed bookmark and new highlight its stream position (in that order),
    store them."""
    count = len(batch.new_collections) + len(batch.dirty) + len(batch.new_highlights)
    if count == 0:
        return []
    first, _ = await repository.allocate_positions(session, batch.owner, count)
    positions = iter(first + i * repository.ONE_MICROSECOND for i in range(count))
    events: list[Event] = []
    for collection in batch.new_collections:
        at = next(positions)
        record = replace(collection, created_at=at, updated_at=at)
        await repository.put_collection(session, record)
        events.append(new_collection_event(record))
    records = [(rules.positioned(r, next(positions), created=c), c) for r, c in batch.dirty.values()]
    await repository.put_bookmarks(session, [r for r, _ in records])
    events += [import_saved_event(r, created=c) for r, c in records]
    if batch.new_highlights:
        events += await _store_highlights(session, batch, positions)
    return events


async def _store_highlights(session: AsyncSession, batch: _Batch, positions: Iterator[datetime]) -> list[Event]:
    """The batch's new highlights, anchored at once in the page text of bookmarks that have one, and the
    search index of their bookmarks (stored before them)."""
    targets = sorted({target for target, _, _ in batch.new_highlights})
    texts = await highlights_store.page_texts_of(session, batch.owner, targets)
    records = []
    for target, hid, h in batch.new_highlights:
        record = rules.new_highlight(batch.owner, hid, target, h, next(positions))
        if (text := texts.get(target)) is not None:
            record = highlight_rules.anchored(record, anchor(text, record.selector), record.updated_at) or record
        records.append(record)
    await highlights_store.put(session, records)
    await highlights_store.reindex(session, batch.owner, targets)
    return [highlight_event(r) for r in records]


def _report_rows(batch: _Batch) -> list[dict[str, Any]]:
    rows = []
    for item, applied in batch.outcomes:
        record_id = applied.record.client_bookmark_id if applied.record is not None else None
        rows.append(
            {
                "ordinal": item.ordinal,
                "line": item.line,
                "url": item.url,
                "outcome": applied.outcome,
                "reason": item.reason,
                "client_bookmark_id": record_id,
            }
        )
    return rows


def _counters(row: RowMapping, batch: _Batch) -> dict[str, int]:
    counts = {name: row[name] for name in ("created", "updated", "unchanged", "invalid")}
    for _, applied in batch.outcomes:
        counts[applied.outcome] += 1
    last = batch.outcomes[-1][0].ordinal
    return {**counts, "processed": row["processed"] + len(batch.outcomes), "next_ordinal": last + 1}


async def write_batch(
    sessions: SessionFactory, import_id: uuid.UUID, items: list[ImportItem], config: JobConfig
) -> None:
    """Apply ``items`` (consecutive, from the checkpoint on) in ONE transaction, checkpoint included."""
    async with transaction(sessions) as session:
        row = await _lease(session, import_id, config)
        if row is None:
            raise LeaseLost()
        if items[0].ordinal != row["next_ordinal"]:
            raise LeaseLost()  # someone else moved the checkpoint: never apply an item twice
        owner: uuid.UUID = row["owner_uid"]
        batch = await _load_batch(session, owner, items)
        for item in items:
            batch.apply(item)
        events = await _store_batch(session, batch)
        await store.add_report_rows(session, import_id, _report_rows(batch))
        await store.set_fields(session, import_id, **_counters(row, batch))
        await add_events(session, events)


async def create_collections(
    sessions: SessionFactory, import_id: uuid.UUID, paths: list[tuple[str, ...]], config: JobConfig
) -> None:
    """Create every collection at ``paths`` that does not exist yet (one transaction, under the lease).
    A JSON export lists its empty collections too; they must come back although no item names them.
    Idempotent: a resumed import finds them by name path and creates nothing."""
    async with transaction(sessions) as session:
        row = await _lease(session, import_id, config)
        if row is None:
            raise LeaseLost()
        batch = await _load_batch(session, row["owner_uid"], [])
        for path in paths:
            batch.collection_for(path)
        await add_events(session, await _store_batch(session, batch))


# --- one import -------------------------------------------------------------------------------------


async def _spool(sessions: SessionFactory, import_id: uuid.UUID) -> BinaryIO:
    """The stored upload copied to a local temporary file, one chunk row at a time."""
    spool = cast(BinaryIO, tempfile.TemporaryFile())  # noqa: SIM115 - closed by the caller
    seq = 0
    while True:
        async with sessions() as session:
            data = await store.read_chunk(session, import_id, seq)
        if data is None:
            break
        spool.write(data)
        seq += 1
    spool.seek(0)
    return spool


async def _lease(session: AsyncSession, import_id: uuid.UUID, config: JobConfig) -> RowMapping | None:
    return await store.hold_lease(session, import_id, worker_id=config.worker_id, lease_seconds=config.lease_seconds)


async def _end(
    sessions: SessionFactory, import_id: uuid.UUID, config: JobConfig, status: str, error: str | None
) -> None:
    async with transaction(sessions) as session:
        if await _lease(session, import_id, config):
            await store.finish(session, import_id, status=status, error=error)


async def _prepare(
    sessions: SessionFactory, row: RowMapping, fp: BinaryIO, config: JobConfig
) -> tuple[str, list[ImportItem]]:
    """The import's format (detected once) and ``total`` (the file counted once, before any write); with
    them the first batch, when the count pass read it (a fresh import: it starts at ordinal 0)."""
    fmt: str = row["format"] or await asyncio.to_thread(resolve_format, fp, row["requested_format"])
    first: list[ImportItem] = []
    if row["total"] is None:
        keep = config.batch_size if row["next_ordinal"] == 0 else 0
        total, first = await asyncio.to_thread(count_items, fp, fmt, keep=keep)
        async with transaction(sessions) as session:
            if await _lease(session, row["id"], config) is None:
                raise LeaseLost()
            await store.set_fields(session, row["id"], format=fmt, total=total)
    return fmt, first


def _next_batch(items: Iterator[ImportItem], size: int) -> list[ImportItem]:
    return list(islice(items, size))


async def _write_batches(
    sessions: SessionFactory,
    import_id: uuid.UUID,
    first: list[ImportItem],
    items: Iterator[ImportItem],
    config: JobConfig,
) -> None:
    """Write ``first`` (when not empty), then ``items`` batch by batch, each parsed (in a thread) while the
    one before it is written: the parser never waits for PostgreSQL. Parsing ahead writes nothing, so the
    checkpoint stays the last committed batch; a file error found ahead is raised after the batches before
    it are written."""
    ahead = asyncio.ensure_future(asyncio.to_thread(_next_batch, items, config.batch_size))
    try:
        if first:
            await write_batch(sessions, import_id, first, config)
        while batch := await ahead:
            ahead = asyncio.ensure_future(asyncio.to_thread(_next_batch, items, config.batch_size))
            await write_batch(sessions, import_id, batch, config)
    finally:
        # The reading thread must be done with the file before the caller closes it.
        with contextlib.suppress(Exception):
            await ahead


async def run_import(sessions: SessionFactory, row: RowMapping, config: JobConfig) -> None:
    """Run (or resume) one claimed import to its end; a whole-file problem fails it with a message."""
    import_id: uuid.UUID = row["id"]
    if row["claims"] > MAX_CLAIMS:
        await _end(sessions, import_id, config, "failed", _CRASHED)
        return
    with await _spool(sessions, import_id) as fp:
        try:
            fmt, first = await _prepare(sessions, row, fp, config)
            if fmt == "json" and row["next_ordinal"] == 0:
                fp.seek(0)
                listed = await asyncio.to_thread(json_collections, fp)
                await create_collections(sessions, import_id, [c.path for c in listed if c.path], config)
            items = iter_items(fp, fmt, start=row["next_ordinal"] + len(first))
            await _write_batches(sessions, import_id, first, items, config)
        except ImportFormatError as exc:
            await _end(sessions, import_id, config, "failed", str(exc))
            return
        except LeaseLost:
            log.warning("import %s: lease lost, another worker continues it", import_id)
            return
    await _end(sessions, import_id, config, "completed", None)


async def claim(sessions: SessionFactory, config: JobConfig) -> RowMapping | None:
    async with transaction(sessions) as session:
        return await store.claim_due(session, worker_id=config.worker_id, lease_seconds=config.lease_seconds)


async def run_import_worker(
    sessions: SessionFactory, config: JobConfig, wakeup: asyncio.Event, poll_seconds: float = 5.0
) -> None:
    """The background loop: claim, run, repeat; sleep until woken (a new upload) or ``poll_seconds``.
    While the database is away or not answering, the loop backs off instead of polling at its pace."""
    backoff = Backoff(first=0.5, cap=10.0)
    while True:
        try:
            row = await claim(sessions, config)
            backoff.reset()
            if row is not None:
                await run_through_outages(sessions, row, config)
                continue
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_outage(exc):
                log.warning("import worker: the database is unavailable (%s); retrying", type(exc).__name__)
                await backoff.wait()
                continue
            log.exception("import worker: unexpected error; retrying after a pause")
        wakeup.clear()
        await wait_for_event(wakeup, poll_seconds)


async def run_through_outages(sessions: SessionFactory, row: RowMapping, config: JobConfig) -> None:
    """Run a claimed import to its end. An outage pauses it, backing off, and it resumes from its last
    checkpoint under the same lease (renewed on resuming): a slow database neither fails the import nor
    counts as another claim. It stops when the lease turns out to be another worker's."""
    import_id: uuid.UUID = row["id"]
    current: RowMapping | None = row
    backoff = Backoff(first=0.5, cap=10.0)
    while True:
        try:
            if current is None:
                current = await _resumed(sessions, import_id, config)
                if current is None:
                    log.warning("import %s: lease lost during an outage, another worker continues it", import_id)
                    return
            await run_import(sessions, current, config)
            return
        except Exception as exc:
            if not is_outage(exc):
                raise
            log.warning("import %s waits for the database (%s)", import_id, type(exc).__name__)
            current = None
        await backoff.wait()


async def _resumed(sessions: SessionFactory, import_id: uuid.UUID, config: JobConfig) -> RowMapping | None:
    """The import's current row with our lease renewed, or None when the lease is no longer ours."""
    async with transaction(sessions) as session:
        return await _lease(session, import_id, config)
