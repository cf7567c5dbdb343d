"""Search cursors: the keyset of the last result, signed for one user and one query.

Same mechanism as the delta cursor (:mod:`bookmarks.domain.cursor`): ``base64url(body) . base64url(mac)``
with the MAC over ``owner|body`` and the same secret. The body starts with its own version tag ``s1``,
so a search cursor is never a valid delta cursor and vice versa. Decoding is strict: the text must be
exactly the canonical encoding of what it decodes to, so no character can change unnoticed.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from bookmarks.domain.cursor import micros, open_body, sign_body
from bookmarks.search.query import Query
from common.errors import InvalidCursor

_VERSION: Final = "s1"
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_NO_RANK: Final = "-"


@dataclass(frozen=True, slots=True)
class SearchPosition:
    """The last result of a page: relevance (None when the query has no words), sort time, id."""

    rank: float | None
    sort_time: datetime
    client_bookmark_id: str


def query_fingerprint(query: Query) -> str:
    """A short hash of the query's canonical text: a cursor is valid only for the query it came from."""
    return hashlib.sha256(query.canonical().encode()).hexdigest()[:32]


def encode_search_cursor(position: SearchPosition, *, query: Query, owner: uuid.UUID, secret: str) -> str:
    rank = _NO_RANK if position.rank is None else repr(float(position.rank))
    body = f"{_VERSION}|{query_fingerprint(query)}|{rank}|{micros(position.sort_time)}|{position.client_bookmark_id}"
    return sign_body(body, owner=owner, secret=secret)


def decode_search_cursor(cursor: str, *, query: Query, owner: uuid.UUID, secret: str) -> SearchPosition:
    """The position in ``cursor``; InvalidCursor when altered, another user's, or from another query."""
    body = open_body(cursor, owner=owner, secret=secret)
    parts = body.split("|", 4)
    if len(parts) != 5 or parts[0] != _VERSION or parts[1] != query_fingerprint(query):
        raise InvalidCursor("The cursor belongs to another query or was not issued by this server.")
    _, _, rank_text, micros_text, client_bookmark_id = parts
    if (rank_text == _NO_RANK) == query.has_text:
        raise InvalidCursor()
    try:
        rank = None if rank_text == _NO_RANK else float(rank_text)
        sort_time = _EPOCH + timedelta(microseconds=int(micros_text))
    except (ValueError, OverflowError) as exc:
        raise InvalidCursor() from exc
    if rank is not None and not math.isfinite(rank):
        raise InvalidCursor()
    return SearchPosition(rank, sort_time, client_bookmark_id)
