"""Opaque delta cursors: a stream position signed for one user (docs/api-guide.md, section 4).

The cursor is ``base64url(position) . base64url(hmac)``; the MAC covers the owner too, so a cursor
altered in any way, truncated, or presented by another user is rejected as ``invalid-cursor``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from common.errors import InvalidCursor

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_VERSION = "1"
_B64URL = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class StreamPosition:
    """A point of a user's stream. Bookmarks and collections share the stream (docs/api-guide.md, section 11), so
    ``client_bookmark_id`` holds the record's id, a bookmark's or a collection's (see ``record_id``)."""

    updated_at: datetime
    client_bookmark_id: str

    @property
    def record_id(self) -> str:
        return self.client_bookmark_id


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """Strict: only the unpadded base64url that :func:`_b64` writes, so one cursor has one spelling."""
    if not _B64URL.fullmatch(text):
        raise ValueError("not unpadded base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:  # unused trailing bits set: another spelling of the same bytes
        raise ValueError("not canonical base64url")
    return data


def micros(ts: datetime) -> int:
    """Microseconds since the epoch (exact, unlike ``timestamp()``)."""
    delta = ts - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _mac(secret: bytes, owner: uuid.UUID, body: str) -> bytes:
    return hmac.new(secret, f"{owner}|{body}".encode(), hashlib.sha256).digest()[:16]


def sign_body(body: str, *, owner: uuid.UUID, secret: str) -> str:
    """``base64url(body) . base64url(mac)``, the MAC over ``owner|body`` (every cursor kind uses this)."""
    return f"{_b64(body.encode())}.{_b64(_mac(secret.encode(), owner, body))}"


def open_body(cursor: str, *, owner: uuid.UUID, secret: str) -> str:
    """The signed body of ``cursor``; InvalidCursor unless it is exactly what :func:`sign_body` made for
    this owner (altered, truncated, another user's, or a non-canonical spelling of the same bytes)."""
    try:
        body_part, mac_part = cursor.split(".")
        body = _unb64(body_part).decode()
        mac = _unb64(mac_part)
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidCursor() from exc
    if not hmac.compare_digest(mac, _mac(secret.encode(), owner, body)):
        raise InvalidCursor()
    return body


def encode_cursor(position: StreamPosition, *, owner: uuid.UUID, secret: str) -> str:
    return sign_body(
        f"{_VERSION}|{micros(position.updated_at)}|{position.client_bookmark_id}", owner=owner, secret=secret
    )


def decode_cursor(cursor: str, *, owner: uuid.UUID, secret: str) -> StreamPosition:
    body = open_body(cursor, owner=owner, secret=secret)
    try:
        version, micros_text, client_bookmark_id = body.split("|", 2)
        if version != _VERSION:
            raise ValueError(f"cursor version {version!r}")
        return StreamPosition(_EPOCH + timedelta(microseconds=int(micros_text)), client_bookmark_id)
    except (ValueError, OverflowError) as exc:
        raise InvalidCursor() from exc
