"""Point reads of the bookmarks database: whether a user is pro, and a live bookmark by its URL."""

from __future__ import annotations

import uuid

from sqlalchemy import UUID, Text, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, user_streams

_OWNER = bindparam("owner", type_=UUID(as_uuid=True))


async def is_pro(session: AsyncSession, owner: uuid.UUID) -> bool:
    row = (await session.execute(select(user_streams.c.is_pro).where(user_streams.c.owner_uid == owner))).first()
    return bool(row.is_pro) if row is not None else False


# ix_bookmarks_live_url serves it: the live rows of one owner and URL, newest position first.
_BY_URL = (
    select(*BOOKMARK_COLUMNS)
    .where(
        bookmarks.c.owner_uid == _OWNER,
        bookmarks.c.normalized_url == bindparam("normalized_url", type_=Text()),
        bookmarks.c.deleted_at.is_(None),
    )
    .order_by(bookmarks.c.updated_at.desc())
    .limit(1)
)


async def live_bookmark_by_url(session: AsyncSession, owner: uuid.UUID, normalized_url: str) -> Bookmark | None:
    """The owner's most recently changed live bookmark of ``normalized_url``, or None."""
    row = (await session.execute(_BY_URL, {"owner": owner, "normalized_url": normalized_url})).mappings().first()
    return Bookmark.from_row(row) if row is not None else None
