"""Writes to the bookmarks database. Every write of a user's stream first takes a position from
:func:`allocate_positions`, which locks the user's stream row until commit (ARCHITECTURE rule 3)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import RowMapping, text
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import COLUMNS
from common.outbox import forget_published_events

_ONE_MICROSECOND = timedelta(microseconds=1)

_ALLOCATE = text(
    """
    INSERT INTO user_streams AS s (owner_uid, last_position)
    VALUES (:owner, clock_timestamp() + (:n - 1) * interval '1 microsecond')
    ON CONFLICT (owner_uid) DO UPDATE
      SET last_position = GREATEST(clock_timestamp(), s.last_position + interval '1 microsecond')
                          + (:n - 1) * interval '1 microsecond'
    RETURNING last_position, is_pro
    """
)


async def allocate_positions(session: AsyncSession, owner: uuid.UUID, count: int = 1) -> tuple[datetime, bool]:
    """Reserve ``count`` consecutive positions (1 µs apart) after every committed one of this user.

    The upsert holds the stream row's lock until the transaction ends, so positions are handed out in
    commit order and a reader can never pass a position that a later commit fills. Returns the first
    position and the user's Pro flag.
    """
    row = (await session.execute(_ALLOCATE, {"owner": owner, "n": max(1, count)})).one()
    last: datetime = row.last_position
    return last - (max(1, count) - 1) * _ONE_MICROSECOND, bool(row.is_pro)


async def is_user_deleted(session: AsyncSession, owner: uuid.UUID) -> bool:
    found = await session.execute(text("SELECT 1 FROM deleted_users WHERE owner_uid = :o"), {"o": owner})
    return found.first() is not None


async def get_for_update(session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str) -> RowMapping | None:
    result = await session.execute(
        text("SELECT * FROM bookmarks WHERE owner_uid = :o AND client_bookmark_id = :id FOR UPDATE"),
        {"o": owner, "id": client_bookmark_id},
    )
    return result.mappings().first()


async def insert_bookmark(session: AsyncSession, values: dict[str, Any]) -> RowMapping:
    cols = [c for c in COLUMNS if c in values]
    statement = text(
        f"INSERT INTO bookmarks ({', '.join(cols)}) VALUES ({', '.join(':' + c for c in cols)}) "  # noqa: S608
        "RETURNING *"
    )
    return (await session.execute(statement, values)).mappings().one()


async def update_bookmark(
    session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str, changes: dict[str, Any]
) -> RowMapping:
    # Column names come from our own constant list, never from the request.
    assignments = ", ".join(f"{c} = :{c}" for c in changes if c in COLUMNS)
    statement = text(
        f"UPDATE bookmarks SET {assignments} WHERE owner_uid = :_owner AND client_bookmark_id = :_id "  # noqa: S608
        "RETURNING *"
    )
    params = {**changes, "_owner": owner, "_id": client_bookmark_id}
    return (await session.execute(statement, params)).mappings().one()


async def set_pro(session: AsyncSession, owner: uuid.UUID, is_pro: bool) -> bool:
    """Record the plan; return True when it changed."""
    result = await session.execute(
        text(
            """
            WITH prev AS (SELECT is_pro FROM user_streams WHERE owner_uid = :o FOR UPDATE)
            INSERT INTO user_streams (owner_uid, last_position, is_pro) VALUES (:o, clock_timestamp(), :p)
            ON CONFLICT (owner_uid) DO UPDATE SET is_pro = EXCLUDED.is_pro
            RETURNING (SELECT is_pro FROM prev) AS previous
            """
        ),
        {"o": owner, "p": is_pro},
    )
    previous = result.one().previous
    if previous is None:  # first time we hear of this user: only an upgrade changes what devices see
        return is_pro
    return bool(previous != is_pro)


async def ids_with_save_why(session: AsyncSession, owner: uuid.UUID) -> list[str]:
    result = await session.execute(
        text(
            "SELECT client_bookmark_id FROM bookmarks WHERE owner_uid = :o AND save_why IS NOT NULL "
            "AND deleted_at IS NULL ORDER BY updated_at, client_bookmark_id FOR UPDATE"
        ),
        {"o": owner},
    )
    return [r[0] for r in result]


async def all_for_owner(session: AsyncSession, owner: uuid.UUID) -> list[RowMapping]:
    result = await session.execute(
        text("SELECT * FROM bookmarks WHERE owner_uid = :o ORDER BY updated_at, client_bookmark_id FOR UPDATE"),
        {"o": owner},
    )
    return list(result.mappings())


async def purge_user(session: AsyncSession, owner: uuid.UUID) -> None:
    for table in ("bookmarks", "pending_enrichments", "user_streams"):
        await session.execute(text(f"DELETE FROM {table} WHERE owner_uid = :o"), {"o": owner})  # noqa: S608
    await session.execute(
        text("INSERT INTO deleted_users (owner_uid, deleted_at) VALUES (:o, now()) ON CONFLICT DO NOTHING"),
        {"o": owner},
    )
    await forget_published_events(session, key=str(owner))


async def save_pending_enrichment(
    session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str, normalized_url: str, event: str
) -> None:
    await session.execute(
        text(
            """
            INSERT INTO pending_enrichments (owner_uid, client_bookmark_id, normalized_url, event)
            VALUES (:o, :id, :u, CAST(:e AS jsonb))
            ON CONFLICT (owner_uid, client_bookmark_id)
            DO UPDATE SET normalized_url = EXCLUDED.normalized_url, event = EXCLUDED.event, received_at = now()
            """
        ),
        {"o": owner, "id": client_bookmark_id, "u": normalized_url, "e": event},
    )


async def take_pending_enrichment(
    session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str
) -> dict[str, Any] | None:
    result = await session.execute(
        text(
            "DELETE FROM pending_enrichments WHERE owner_uid = :o AND client_bookmark_id = :id "
            "RETURNING event"
        ),
        {"o": owner, "id": client_bookmark_id},
    )
    row = result.first()
    return dict(row.event) if row is not None else None


ONE_MICROSECOND = _ONE_MICROSECOND


async def delete_one(session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str) -> None:
    await session.execute(
        text("DELETE FROM bookmarks WHERE owner_uid = :o AND client_bookmark_id = :id"),
        {"o": owner, "id": client_bookmark_id},
    )
