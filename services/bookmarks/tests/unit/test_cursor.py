"""The delta cursor codec: round trip, and every altered spelling refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from bookmarks.domain.cursor import StreamPosition, decode_cursor, encode_cursor
from common.errors import InvalidCursor

OWNER = uuid.UUID("00000000-0000-4000-8000-000000000001")
SECRET = "test-secret"
POSITION = StreamPosition(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), "bm-1")


@pytest.fixture
def cursor() -> str:
    return encode_cursor(POSITION, owner=OWNER, secret=SECRET)


def test_round_trip(cursor: str) -> None:
    assert decode_cursor(cursor, owner=OWNER, secret=SECRET) == POSITION


def _alterations(cursor: str) -> list[str]:
    body, mac = cursor.split(".")
    return [
        cursor + "!",
        "!" + cursor,
        cursor + "~",
        cursor.replace(".", "~."),
        cursor + " ",
        " " + cursor,
        f"{body} .{mac}",
        cursor + "=",
        cursor + "==",
        f"{body}=.{mac}",
        f"{body}.={mac}",
        cursor.replace("-", "+").replace("_", "/"),
        cursor + "\x00",
        cursor + "\n",
        f"{body}.{mac}.",
        f"{body}..{mac}",
        "",
        ".",
        f"{body}.",
        f".{mac}",
    ]


def test_altered_spellings_are_refused(cursor: str) -> None:
    for altered in _alterations(cursor):
        if altered == cursor:
            continue
        with pytest.raises(InvalidCursor):
            decode_cursor(altered, owner=OWNER, secret=SECRET)


def test_non_canonical_trailing_bits_are_refused(cursor: str) -> None:
    body, mac = cursor.split(".")
    # 16 MAC bytes are 22 base64 characters whose last one carries 4 unused bits: flip one of them.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(mac[-1])
    twin = mac[:-1] + alphabet[last ^ 1]
    assert twin != mac
    with pytest.raises(InvalidCursor):
        decode_cursor(f"{body}.{twin}", owner=OWNER, secret=SECRET)


def test_another_owner_or_secret_is_refused(cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        decode_cursor(cursor, owner=uuid.uuid4(), secret=SECRET)
    with pytest.raises(InvalidCursor):
        decode_cursor(cursor, owner=OWNER, secret="other")
