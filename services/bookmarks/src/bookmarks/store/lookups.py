"""Point reads of the bookmarks database: whether a user is pro, and a live bookmark by its URL or canonical URL."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import UUID, ColumnElement, Select, Text, bindparam, literal_column, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import BOOKMARK_COLUMNS, DUPLICATE_KEY, bookmarks, user_streams

_OWNER = bindparam("owner", type_=UUID(as_uuid=True))


async def is_pro(session: AsyncSession, owner: uuid.UUID) -> bool:
    row = (await session.execute(select(user_streams.c.is_pro).where(user_streams.c.owner_uid == owner))).first()
    return bool(row.is_pro) if row is not None else False


_URL = bindparam("normalized_url", type_=Text())


def _newest_live(condition: ColumnElement[bool], rank: int) -> Select[Any]:
    return (
        select(*BOOKMARK_COLUMNS, literal_column(str(rank)).label("lookup_rank"))
        .where(bookmarks.c.owner_uid == _OWNER, condition, bookmarks.c.deleted_at.is_(None))
        .order_by(bookmarks.c.updated_at.desc())
        .limit(1)
    )


# The newest live row of one owner saved as the URL (ix_bookmarks_live_url), else the newest whose key is
# the URL (ix_bookmarks_live_duplicate_key): past the first, that is a row whose page names the URL as its
# canonical URL. Two index reads of at most one row each.
_BY_URL = (
    union_all(_newest_live(bookmarks.c.normalized_url == _URL, 0), _newest_live(DUPLICATE_KEY == _URL, 1))
    .order_by(literal_column("lookup_rank"))
    .limit(1)
)


async def live_bookmark_by_url(session: AsyncSession, owner: uuid.UUID, normalized_url: str) -> Bookmark | None:
    """The owner's live bookmark of ``normalized_url``: the most recently changed of those saved as it, else
    of those whose page names it as its canonical URL; None when there is none."""
    row = (await session.execute(_BY_URL, {"owner": owner, "normalized_url": normalized_url})).mappings().first()
    return Bookmark.from_row(row) if row is not None else None
