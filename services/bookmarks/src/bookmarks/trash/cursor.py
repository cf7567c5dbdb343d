"""Trash cursors: the last item of a page (deletion time, id), signed for one user like every cursor."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from bookmarks.domain.cursor import micros, open_body, sign_body
from common.errors import InvalidCursor

_VERSION: Final = "t1"
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class TrashPosition:
    deleted_at: datetime
    client_bookmark_id: str


def encode_trash_cursor(position: TrashPosition, *, owner: uuid.UUID, secret: str) -> str:
    return sign_body(
        f"{_VERSION}|{micros(position.deleted_at)}|{position.client_bookmark_id}", owner=owner, secret=secret
    )


def decode_trash_cursor(cursor: str, *, owner: uuid.UUID, secret: str) -> TrashPosition:
    """The position in ``cursor``; InvalidCursor when altered, another user's, or another kind of cursor."""
    parts = open_body(cursor, owner=owner, secret=secret).split("|", 2)
    if len(parts) != 3 or parts[0] != _VERSION:
        raise InvalidCursor("The cursor is not a trash cursor of this server.")
    try:
        deleted_at = _EPOCH + timedelta(microseconds=int(parts[1]))
    except (ValueError, OverflowError) as exc:
        raise InvalidCursor() from exc
    return TrashPosition(deleted_at, parts[2])
