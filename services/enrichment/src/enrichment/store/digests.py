"""Anti-entropy of the bookmark-URL and users projections (common.anti_entropy): their digests and per-id
hashes, read the way the bookmarks and auth services read their sources, and the one write that lets a
repair of a bookmark through."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, Table, Text, cast, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from common.anti_entropy import bucket_of, flags_value, record_hash
from enrichment.store.tables import BookmarkUrlRow, UserProjectionRow

_urls: Table = BookmarkUrlRow.__table__  # type: ignore[attr-defined]
_users: Table = UserProjectionRow.__table__  # type: ignore[attr-defined]
_BUCKET = bucket_of(_urls.c.client_bookmark_id)
_HASH = record_hash(_urls.c.client_bookmark_id, _urls.c.normalized_url)
_LIVE = _urls.c.deleted.is_(False)
# Older than any real position: a row marked so takes the next event of its bookmark, whatever it says.
UNKNOWN_POSITION = datetime(1970, 1, 1, tzinfo=UTC)


async def digests(session: AsyncSession, users: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict[int, tuple[int, int]]]:
    """Per user, bucket → (count, bit_xor of hashes) of the projection's live rows."""
    found: dict[uuid.UUID, dict[int, tuple[int, int]]] = {user: {} for user in users}
    if users:
        bucket = _BUCKET.label("bucket")
        statement = (
            select(_urls.c.user_id, bucket, func.count(), func.bit_xor(_HASH))
            .where(_urls.c.user_id.in_(users), _LIVE)
            .group_by(_urls.c.user_id, bucket)
        )
        for user, bucket_no, count, xor in (await session.execute(statement)).tuples():
            found[user][bucket_no] = (count, xor)
    return found


async def record_hashes(session: AsyncSession, user: uuid.UUID, buckets: Sequence[int]) -> dict[str, int]:
    """id → hash of the user's live rows in ``buckets``."""
    statement = select(_urls.c.client_bookmark_id, _HASH).where(_urls.c.user_id == user, _LIVE, _BUCKET.in_(buckets))
    return dict((await session.execute(statement)).tuples().all())


async def deleted_users(session: AsyncSession, users: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of ``users`` this service has purged: their projection is gone on purpose."""
    statement = select(_users.c.user_id).where(_users.c.user_id.in_(users), _users.c.deleted.is_(True))
    return set((await session.execute(statement)).scalars())


async def forget_positions(session: AsyncSession, user: uuid.UUID, ids: Sequence[str]) -> None:
    """Mark these rows' positions unknown, so the re-published state applies even where the corrupted row
    claims an equal or newer position; any later real event still wins by its own position."""
    await session.execute(
        update(_urls)
        .where(_urls.c.user_id == user, _urls.c.client_bookmark_id.in_(ids))
        .values(position=UNKNOWN_POSITION)
    )


# --- users (one record per user: consent and plan, as user.updated carries them) ---------------------

_USER_ID = cast(_users.c.user_id, Text)
_USER_HASH = record_hash(_USER_ID, flags_value(_users.c.use_ai, _users.c.is_pro))


def _user_range(after: uuid.UUID | None, up_to: uuid.UUID | None) -> list[ColumnElement[bool]]:
    bounds: list[ColumnElement[bool]] = [_users.c.deleted.is_(False)]
    if after is not None:
        bounds.append(_users.c.user_id > after)
    if up_to is not None:
        bounds.append(_users.c.user_id <= up_to)
    return bounds


async def user_digest(session: AsyncSession, *, after: uuid.UUID | None, up_to: uuid.UUID | None) -> tuple[int, int]:
    """(count, bit_xor of hashes) of the live users in (after, up_to]."""
    statement = select(func.count(), func.coalesce(func.bit_xor(_USER_HASH), 0)).where(*_user_range(after, up_to))
    count, xor = (await session.execute(statement)).one()
    return int(count), int(xor)


async def user_hashes(session: AsyncSession, *, after: uuid.UUID | None, up_to: uuid.UUID | None) -> dict[str, int]:
    statement = select(_USER_ID, _USER_HASH).where(*_user_range(after, up_to))
    return dict((await session.execute(statement)).tuples().all())
