"""Search cursors: opaque, signed for one user and one query, strictly decoded."""

from __future__ import annotations

import string
import uuid
from datetime import UTC, datetime

import pytest

from bookmarks.domain.cursor import StreamPosition, decode_cursor, encode_cursor
from bookmarks.search.cursor import SearchPosition, decode_search_cursor, encode_search_cursor
from bookmarks.search.query import parse_query
from common.errors import InvalidCursor

SECRET = "test-secret"
OWNER = uuid.UUID("11111111-2222-3333-4444-555555555555")
WORDS = parse_query("economie tag:news")
FILTERS = parse_query("is:favorite -tag:old")
WHEN = datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
RANKED = SearchPosition(0.123456789012345, WHEN, "bm|with|pipes")
UNRANKED = SearchPosition(None, WHEN, "bm-1")


def test_round_trip_with_rank() -> None:
    cursor = encode_search_cursor(RANKED, query=WORDS, owner=OWNER, secret=SECRET)
    assert decode_search_cursor(cursor, query=WORDS, owner=OWNER, secret=SECRET) == RANKED


def test_round_trip_without_rank() -> None:
    cursor = encode_search_cursor(UNRANKED, query=FILTERS, owner=OWNER, secret=SECRET)
    assert decode_search_cursor(cursor, query=FILTERS, owner=OWNER, secret=SECRET) == UNRANKED


def test_float32_ranks_survive_exactly() -> None:
    import struct

    rank = struct.unpack("f", struct.pack("f", 0.1))[0]  # what PostgreSQL's real turns into
    cursor = encode_search_cursor(SearchPosition(rank, WHEN, "x"), query=WORDS, owner=OWNER, secret=SECRET)
    assert decode_search_cursor(cursor, query=WORDS, owner=OWNER, secret=SECRET).rank == rank


def test_the_cursor_is_opaque() -> None:
    cursor = encode_search_cursor(RANKED, query=WORDS, owner=OWNER, secret=SECRET)
    assert "economie" not in cursor and "bm" not in cursor
    assert set(cursor) <= set(string.ascii_letters + string.digits + "-_.")


def test_every_single_character_change_is_rejected() -> None:
    cursor = encode_search_cursor(RANKED, query=WORDS, owner=OWNER, secret=SECRET)
    alphabet = string.ascii_letters + string.digits + "-_."
    for index, original in enumerate(cursor):
        for replacement in alphabet:
            if replacement == original:
                continue
            altered = cursor[:index] + replacement + cursor[index + 1 :]
            with pytest.raises(InvalidCursor):
                decode_search_cursor(altered, query=WORDS, owner=OWNER, secret=SECRET)


@pytest.mark.parametrize("suffix", ["=", "==", "A", " ", "\n", "."])
def test_appended_characters_are_rejected(suffix: str) -> None:
    cursor = encode_search_cursor(RANKED, query=WORDS, owner=OWNER, secret=SECRET)
    with pytest.raises(InvalidCursor):
        decode_search_cursor(cursor + suffix, query=WORDS, owner=OWNER, secret=SECRET)


def test_another_query_is_rejected() -> None:
    cursor = encode_search_cursor(RANKED, query=WORDS, owner=OWNER, secret=SECRET)
    with pytest.raises(InvalidCursor):
        decode_search_cursor(cursor, query=parse_query("economie tag:sport"), owner=OWNER, secret=SECRET)


def test_the_same_query_written_differently_is_accepted() -> None:
    cursor = encode_search_cursor(RANKED, query=WORDS, owner=OWNER, secret=SECRET)
    same = parse_query("  ÉCONOMIE   TAG:News ")
    assert decode_search_cursor(cursor, query=same, owner=OWNER, secret=SECRET) == RANKED


def test_another_user_or_secret_is_rejected() -> None:
    cursor = encode_search_cursor(RANKED, query=WORDS, owner=OWNER, secret=SECRET)
    with pytest.raises(InvalidCursor):
        decode_search_cursor(cursor, query=WORDS, owner=uuid.uuid4(), secret=SECRET)
    with pytest.raises(InvalidCursor):
        decode_search_cursor(cursor, query=WORDS, owner=OWNER, secret="other")


def test_delta_and_search_cursors_do_not_cross() -> None:
    delta = encode_cursor(StreamPosition(WHEN, "bm-1"), owner=OWNER, secret=SECRET)
    with pytest.raises(InvalidCursor):
        decode_search_cursor(delta, query=WORDS, owner=OWNER, secret=SECRET)
    search = encode_search_cursor(UNRANKED, query=FILTERS, owner=OWNER, secret=SECRET)
    with pytest.raises(InvalidCursor):
        decode_cursor(search, owner=OWNER, secret=SECRET)


@pytest.mark.parametrize("garbage", ["", ".", "..", "abc", "a.b.c", "é.é", "\x00.\x00", "x" * 600])
def test_garbage_is_rejected(garbage: str) -> None:
    with pytest.raises(InvalidCursor):
        decode_search_cursor(garbage, query=WORDS, owner=OWNER, secret=SECRET)
