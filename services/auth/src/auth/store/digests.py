"""Reads behind anti-entropy of the projections of users (common.anti_entropy): a user is the record,
its consent and plan the value, exactly as ``user.updated`` carries them."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ColumnElement, Table, Text, cast, false, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from auth.store.tables import SubscriptionRow, UserRow, UserSettingsRow
from common.anti_entropy import flags_value, record_hash

_users: Table = UserRow.__table__  # type: ignore[attr-defined]
_settings: Table = UserSettingsRow.__table__  # type: ignore[attr-defined]
_plans: Table = SubscriptionRow.__table__  # type: ignore[attr-defined]

_JOINED = _users.outerjoin(_settings, _settings.c.user_id == _users.c.id).outerjoin(
    _plans, _plans.c.user_id == _users.c.id
)
_ID = cast(_users.c.id, Text)
_HASH = record_hash(
    _ID, flags_value(func.coalesce(_settings.c.use_ai, false()), func.coalesce(_plans.c.is_pro, false()))
)
_CHANGED = func.greatest(_users.c.updated_at, _settings.c.updated_at, _plans.c.updated_at)


def _in_range(after: uuid.UUID | None, up_to: uuid.UUID | None) -> list[ColumnElement[bool]]:
    bounds = [] if after is None else [_users.c.id > after]
    return bounds if up_to is None else [*bounds, _users.c.id <= up_to]


async def next_ids(session: AsyncSession, *, after: uuid.UUID | None, limit: int) -> list[uuid.UUID]:
    """Up to ``limit`` user ids after ``after``, in order."""
    statement = select(_users.c.id).where(*_in_range(after, None)).order_by(_users.c.id).limit(limit)
    return list((await session.execute(statement)).scalars())


async def digest(session: AsyncSession, *, after: uuid.UUID | None, up_to: uuid.UUID | None) -> tuple[int, int]:
    """(count, bit_xor of hashes) of the users in (after, up_to]."""
    statement = (
        select(func.count(), func.coalesce(func.bit_xor(_HASH), 0)).select_from(_JOINED).where(*_in_range(after, up_to))
    )
    count, xor = (await session.execute(statement)).one()
    return int(count), int(xor)


async def hashes(session: AsyncSession, *, after: uuid.UUID | None, up_to: uuid.UUID | None) -> dict[str, int]:
    statement = select(_ID, _HASH).select_from(_JOINED).where(*_in_range(after, up_to))
    return dict((await session.execute(statement)).tuples().all())


async def changed_since(
    session: AsyncSession, *, after: uuid.UUID | None, up_to: uuid.UUID | None, since: datetime
) -> list[str]:
    """Users in the range whose row, consent or plan changed after ``since`` (their event may be in flight)."""
    statement = select(_ID).select_from(_JOINED).where(*_in_range(after, up_to), _CHANGED > since)
    return list((await session.execute(statement)).scalars())
