"""Storage of link previews: the shared cache, the re-encoded images and the per-user minute counter."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import and_, case, delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from enrichment.previews.images import EncodedImage
from enrichment.previews.model import PreviewFacts
from enrichment.store.tables import PreviewImageRow, PreviewRateRow, PreviewRow

_previews = PreviewRow.__table__  # type: ignore[attr-defined]
_images = PreviewImageRow.__table__  # type: ignore[attr-defined]
_rate = PreviewRateRow.__table__  # type: ignore[attr-defined]

_FACT_COLUMNS = ("title", "description", "site_name", "language", "canonical_url", "image_id", "favicon_id")


async def count_request(session: AsyncSession, user_id: uuid.UUID, *, window_start: datetime) -> int:
    """Count one request in the user's minute starting at ``window_start``; return the minute's count."""
    statement = insert(_rate).values(user_id=user_id, window_start=window_start, used=1)
    rolled = _rate.c.window_start < statement.excluded.window_start
    upsert = statement.on_conflict_do_update(
        index_elements=[_rate.c.user_id],
        set_={
            "window_start": case((rolled, statement.excluded.window_start), else_=_rate.c.window_start),
            "used": case((rolled, 1), else_=_rate.c.used + 1),
        },
    )
    return int((await session.execute(upsert.returning(_rate.c.used))).scalar_one())


async def cached(session: AsyncSession, normalized_url: str, *, now: datetime) -> PreviewFacts | None:
    row = (
        await session.execute(
            select(*(_previews.c[name] for name in _FACT_COLUMNS)).where(
                and_(_previews.c.normalized_url == normalized_url, _previews.c.expires_at > now)
            )
        )
    ).one_or_none()
    return None if row is None else PreviewFacts(**row._asdict())


async def store(
    session: AsyncSession, normalized_url: str, facts: PreviewFacts, *, now: datetime, ttl: timedelta
) -> None:
    values = {name: getattr(facts, name) for name in _FACT_COLUMNS}
    statement = insert(_previews).values(normalized_url=normalized_url, fetched_at=now, expires_at=now + ttl, **values)
    statement = statement.on_conflict_do_update(
        index_elements=[_previews.c.normalized_url],
        set_={**{name: statement.excluded[name] for name in _FACT_COLUMNS}, "fetched_at": now, "expires_at": now + ttl},
    )
    await session.execute(statement)


async def save_image(session: AsyncSession, image: EncodedImage) -> None:
    """Store ``image`` once (its id is the hash of its bytes: an existing row is the same picture)."""
    statement = insert(_images).values(
        id=image.id, data=image.data, width=image.width, height=image.height, size_bytes=len(image.data)
    )
    await session.execute(statement.on_conflict_do_nothing(index_elements=[_images.c.id]))


async def image_data(session: AsyncSession, image_id: str) -> bytes | None:
    found = await session.execute(select(_images.c.data).where(_images.c.id == image_id))
    data = found.scalar_one_or_none()
    return None if data is None else bytes(data)


async def delete_expired(session: AsyncSession, *, now: datetime, limit: int = 1000) -> int:
    """Drop expired previews (bounded); their images stay, as bookmarks may show them."""
    expired = (
        select(_previews.c.normalized_url)
        .where(_previews.c.expires_at <= now)
        .order_by(_previews.c.expires_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    result = await session.execute(delete(_previews).where(_previews.c.normalized_url.in_(expired.scalar_subquery())))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def forget_user(session: AsyncSession, user_id: uuid.UUID) -> None:
    await session.execute(delete(_rate).where(_rate.c.user_id == user_id))
