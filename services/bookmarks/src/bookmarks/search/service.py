"""``GET /v1/bookmarks/search`` (docs/api-guide.md, section 12): parse, read one page in one snapshot,
sign the cursor."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from bookmarks.domain.model import Bookmark
from bookmarks.search import queries
from bookmarks.search.cursor import decode_search_cursor, encode_search_cursor
from bookmarks.search.query import parse_query
from common.db import SessionFactory, transaction


@dataclass(frozen=True, slots=True)
class SearchResult:
    record: Bookmark
    snippet: str | None


@dataclass(frozen=True, slots=True)
class SearchPage:
    results: list[SearchResult]
    next_cursor: str | None
    is_pro: bool


async def search(
    *,
    sessions: SessionFactory,
    owner: uuid.UUID,
    q: str | None,
    limit: int,
    cursor: str | None,
    cursor_secret: str,
) -> SearchPage:
    """One page of the owner's live bookmarks matching ``q`` (400 on a bad query or cursor)."""
    query = parse_query(q or "")
    after = decode_search_cursor(cursor, query=query, owner=owner, secret=cursor_secret) if cursor else None
    async with transaction(sessions) as session:  # one snapshot for the page and its snippets
        conn = await session.connection()  # Core statements only: no ORM layer per execute
        match, is_pro = await queries.context(conn, query, owner)
        hits = await queries.page(conn, query, match, owner=owner, after=after, limit=limit + 1)
        shown = hits[:limit]
        snippets = await queries.snippets(conn, query, match, shown)
    next_cursor = None
    if len(hits) > limit:
        next_cursor = encode_search_cursor(shown[-1].position, query=query, owner=owner, secret=cursor_secret)
    results = [SearchResult(hit.record, snippet) for hit, snippet in zip(shown, snippets, strict=True)]
    return SearchPage(results, next_cursor, is_pro)
