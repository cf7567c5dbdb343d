"""Duplicates cursors: the last group of a page (newest save time, key), signed for one user."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Final

from bookmarks.domain.cursor import micros, open_body, sign_body
from bookmarks.duplicates.store import GroupKey
from common.errors import InvalidCursor

_VERSION: Final = "d1"
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def encode_group_cursor(last: GroupKey, *, owner: uuid.UUID, secret: str) -> str:
    return sign_body(f"{_VERSION}|{micros(last.newest)}|{last.key}", owner=owner, secret=secret)


def decode_group_cursor(cursor: str, *, owner: uuid.UUID, secret: str) -> GroupKey:
    parts = open_body(cursor, owner=owner, secret=secret).split("|", 2)
    if len(parts) != 3 or parts[0] != _VERSION:
        raise InvalidCursor("The cursor is not a duplicates cursor of this server.")
    try:
        newest = _EPOCH + timedelta(microseconds=int(parts[1]))
    except (ValueError, OverflowError) as exc:
        raise InvalidCursor() from exc
    return GroupKey(parts[2], newest)
