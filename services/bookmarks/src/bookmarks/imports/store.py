"""Reads and writes of the import job's tables (SQLAlchemy Core over ``imports/tables.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import IO, Any

from sqlalchemy import Integer, RowMapping, Text, and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark
from bookmarks.imports.tables import import_chunks, import_report, imports
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, collections

CHUNK_BYTES = 1024 * 1024
ACTIVE = ("queued", "running")


async def create_import(
    session: AsyncSession, *, import_id: uuid.UUID, owner: uuid.UUID, fmt: str, upload: IO[bytes], size: int
) -> RowMapping:
    """The queued import row and its upload, 1 MiB per chunk row (read from ``upload`` a chunk at a time)."""
    await session.execute(
        insert(imports).values(
            id=import_id,
            owner_uid=owner,
            status="queued",
            requested_format=fmt,
            size_bytes=size,
            created_at=func.now(),
        )
    )
    seq = 0
    while chunk := upload.read(CHUNK_BYTES):
        await session.execute(insert(import_chunks).values(import_id=import_id, seq=seq, data=chunk))
        seq += 1
    return await get_import(session, import_id)


async def get_import(session: AsyncSession, import_id: uuid.UUID, *, lock: bool = False) -> RowMapping:
    statement = select(imports).where(imports.c.id == import_id)
    row = (await session.execute(statement.with_for_update() if lock else statement)).mappings().one()
    return row


async def find_import(session: AsyncSession, owner: uuid.UUID, import_id: uuid.UUID) -> RowMapping | None:
    statement = select(imports).where(imports.c.id == import_id, imports.c.owner_uid == owner)
    return (await session.execute(statement)).mappings().first()


async def claim_due(session: AsyncSession, *, worker_id: str, lease_seconds: float) -> RowMapping | None:
    """Take the oldest queued import, or a running one whose worker's lease ran out, under a lease."""
    due = (
        select(imports.c.id)
        .where(
            imports.c.status.in_(ACTIVE),
            or_(imports.c.lease_until.is_(None), imports.c.lease_until < func.now()),
        )
        .order_by(imports.c.created_at)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    found = (await session.execute(due)).first()
    if found is None:
        return None
    statement = (
        update(imports)
        .where(imports.c.id == found.id)
        .values(
            status="running",
            lease_owner=worker_id,
            claims=imports.c.claims + 1,
            lease_until=func.now() + timedelta(seconds=lease_seconds),
        )
        .returning(*imports.c)
    )
    return (await session.execute(statement)).mappings().one()


async def hold_lease(
    session: AsyncSession, import_id: uuid.UUID, *, worker_id: str, lease_seconds: float
) -> RowMapping | None:
    """Lock the import row for this transaction and extend our lease; None when it is no longer ours."""
    statement = (
        update(imports)
        .where(imports.c.id == import_id, imports.c.lease_owner == worker_id, imports.c.status == "running")
        .values(lease_until=func.now() + timedelta(seconds=lease_seconds))
        .returning(*imports.c)
    )
    return (await session.execute(statement)).mappings().first()


async def set_fields(session: AsyncSession, import_id: uuid.UUID, **values: Any) -> None:
    await session.execute(update(imports).where(imports.c.id == import_id).values(**values))


async def finish(session: AsyncSession, import_id: uuid.UUID, *, status: str, error: str | None = None) -> None:
    """End the import (completed or failed) and drop its upload: the report stays."""
    await set_fields(
        session, import_id, status=status, error=error, finished_at=func.now(), lease_owner=None, lease_until=None
    )
    await session.execute(delete(import_chunks).where(import_chunks.c.import_id == import_id))


async def read_chunk(session: AsyncSession, import_id: uuid.UUID, seq: int) -> bytes | None:
    statement = select(import_chunks.c.data).where(import_chunks.c.import_id == import_id, import_chunks.c.seq == seq)
    data: bytes | None = (await session.execute(statement)).scalar_one_or_none()
    return data


_REPORT_ARRAYS = (
    ("ordinal", Integer),
    ("line", Integer),
    ("url", Text),
    ("outcome", Text),
    ("reason", Text),
    ("client_bookmark_id", Text),
)


def _report_insert() -> Any:
    """``INSERT INTO import_report … SELECT :import_id, * FROM unnest(:ordinal, :line, …)``: a batch's report
    rows in one statement (one array per column), not a statement per row."""
    arrays = func.unnest(*(bindparam(n, type_=ARRAY(t)) for n, t in _REPORT_ARRAYS))
    rows = arrays.table_valued(*(n for n, _ in _REPORT_ARRAYS)).render_derived(name="r")
    import_id = bindparam("import_id", type_=import_report.c.import_id.type)
    selected = select(import_id, *(rows.c[n] for n, _ in _REPORT_ARRAYS))
    return insert(import_report).from_select(["import_id", *(n for n, _ in _REPORT_ARRAYS)], selected)


_REPORT_INSERT = _report_insert()


async def add_report_rows(session: AsyncSession, import_id: uuid.UUID, rows: Sequence[dict[str, Any]]) -> None:
    """The report rows of one batch of ``import_id`` (each a dict of the columns but ``import_id``)."""
    if rows:
        arrays = {n: [r[n] for r in rows] for n, _ in _REPORT_ARRAYS}
        await session.execute(_REPORT_INSERT, {"import_id": import_id, **arrays})


async def report_page(session: AsyncSession, import_id: uuid.UUID, after: int, limit: int) -> list[RowMapping]:
    statement = (
        select(import_report)
        .where(import_report.c.import_id == import_id, import_report.c.ordinal > after)
        .order_by(import_report.c.ordinal)
        .limit(limit)
    )
    return list((await session.execute(statement)).mappings())


async def live_by_normalized_url(
    session: AsyncSession, owner: uuid.UUID, normalized_urls: Sequence[str]
) -> dict[str, Bookmark]:
    """The user's live bookmarks with these normalized URLs, locked (oldest first wins a duplicate)."""
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(
            and_(bookmarks.c.owner_uid == owner, bookmarks.c.deleted_at.is_(None)),
            bookmarks.c.normalized_url.in_(list(set(normalized_urls))),
        )
        .order_by(bookmarks.c.created_at.desc())
        .with_for_update()
    )
    return {b.normalized_url: b for b in map(Bookmark.from_row, (await session.execute(statement)).mappings())}


async def live_collections(session: AsyncSession, owner: uuid.UUID) -> list[Collection]:
    statement = select(collections).where(collections.c.owner_uid == owner, collections.c.deleted_at.is_(None))
    return [Collection.from_row(r) for r in (await session.execute(statement)).mappings()]


async def purge_user(session: AsyncSession, owner: uuid.UUID) -> None:
    """The user's imports (their chunks and report rows go with them: ON DELETE CASCADE)."""
    await session.execute(delete(imports).where(imports.c.owner_uid == owner))
