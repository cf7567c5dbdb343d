"""Bounded Content-Encoding decoding: the cap holds while inflating."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator

import brotli
import pytest

from enrichment.fetch.decoding import BoundedDecoder, parse_content_encoding
from enrichment.fetch.errors import TOO_LARGE, UNSUPPORTED_CONTENT, FetchError

MIB = 1024 * 1024
STEP = 64 * 1024


def brotli_stream(total: int, *, chunk: int = MIB) -> bytes:
    """``total`` zero bytes Brotli-compressed as a stream (never held uncompressed)."""
    compressor = brotli.Compressor(quality=5)
    parts = [compressor.process(bytes(chunk)) for _ in range(total // chunk)]
    parts.append(compressor.finish())
    return b"".join(parts)


def gzip_stream(total: int, *, layers: int = 1, chunk: int = MIB) -> bytes:
    """``total`` zero bytes gzipped ``layers`` times, compressed as a stream (never held uncompressed)."""
    compressors = [zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS) for _ in range(layers)]

    def through(data: bytes, *, final: bool) -> bytes:
        for compressor in compressors:
            data = compressor.compress(data) + (compressor.flush() if final else b"")
        return data

    parts = [through(bytes(chunk), final=False) for _ in range(total // chunk)]
    parts.append(through(b"", final=True))
    return b"".join(parts)


def decode_all(decoder: BoundedDecoder, body: bytes, *, raw_chunk: int = 16 * 1024) -> Iterator[bytes]:
    for i in range(0, len(body), raw_chunk):
        yield from decoder.feed(body[i : i + raw_chunk])
    yield from decoder.finish()


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("identity", None),
        ("GZIP", "gzip"),
        ("x-gzip", "x-gzip"),
        (" deflate ", "deflate"),
        ("gzip, identity", "gzip"),
        ("BR", "br"),
    ],
)
def test_supported_encodings(header: str | None, expected: str | None) -> None:
    assert parse_content_encoding(header) == expected


@pytest.mark.parametrize("header", ["gzip, gzip", "deflate, gzip", "gzip,br", "br, br", "zstd", "compress", "bogus"])
def test_stacked_and_unknown_encodings_are_unsupported(header: str) -> None:
    with pytest.raises(FetchError) as caught:
        BoundedDecoder(header, limit=MIB)
    assert caught.value.code == UNSUPPORTED_CONTENT and not caught.value.retriable


def test_gzip_bomb_stops_at_the_cap_in_bounded_pieces() -> None:
    bomb = gzip_stream(64 * MIB)
    decoder = BoundedDecoder("gzip", limit=5 * MIB, step=STEP)
    biggest = 0
    with pytest.raises(FetchError) as caught:
        for piece in decode_all(decoder, bomb):
            biggest = max(biggest, len(piece))
    assert caught.value.code == TOO_LARGE and not caught.value.retriable
    assert biggest <= STEP
    assert 5 * MIB < decoder.decoded_bytes <= 5 * MIB + STEP


def test_brotli_bomb_stops_at_the_cap_in_bounded_pieces() -> None:
    bomb = brotli_stream(256 * MIB)
    assert len(bomb) < 64 * 1024  # a small download that would inflate to 256 MiB
    decoder = BoundedDecoder("br", limit=5 * MIB, step=STEP)
    biggest = 0
    with pytest.raises(FetchError) as caught:
        for piece in decode_all(decoder, bomb):
            biggest = max(biggest, len(piece))
    assert caught.value.code == TOO_LARGE and not caught.value.retriable
    assert biggest <= 2 * STEP  # the decoder's output buffer stops growing at the step
    assert 5 * MIB < decoder.decoded_bytes <= 5 * MIB + 2 * STEP


def test_brotli_bomb_in_one_raw_chunk_is_still_decoded_in_steps() -> None:
    decoder = BoundedDecoder("br", limit=5 * MIB, step=STEP)
    with pytest.raises(FetchError) as caught:
        for piece in decoder.feed(brotli_stream(64 * MIB)):
            assert len(piece) <= 2 * STEP
    assert caught.value.code == TOO_LARGE


def test_brotli_round_trip_under_the_cap() -> None:
    page = b"<html>" + bytes(range(256)) * 4000 + b"</html>"
    decoder = BoundedDecoder("br", limit=5 * MIB, step=STEP)
    pieces = list(decode_all(decoder, brotli.compress(page), raw_chunk=1000))
    assert b"".join(pieces) == page and decoder.decoded_bytes == len(page)


def test_corrupt_brotli_is_unsupported_content() -> None:
    with pytest.raises(FetchError) as caught:
        list(decode_all(BoundedDecoder("br", limit=MIB), b"this is not brotli at all"))
    assert caught.value.code == UNSUPPORTED_CONTENT


def test_raw_bytes_are_capped_too() -> None:
    decoder = BoundedDecoder(None, limit=MIB)
    with pytest.raises(FetchError) as caught:
        list(decode_all(decoder, bytes(MIB + 1)))
    assert caught.value.code == TOO_LARGE


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "deflate", "deflate-raw", None])
def test_round_trip_under_the_cap(encoding: str | None) -> None:
    page = b"<html>" + bytes(range(256)) * 4000 + b"</html>"
    if encoding in ("gzip", "x-gzip"):
        body = gzip.compress(page)
    elif encoding == "deflate":
        body = zlib.compress(page)
    elif encoding == "deflate-raw":
        compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        body, encoding = compressor.compress(page) + compressor.flush(), "deflate"
    else:
        body = page
    decoder = BoundedDecoder(encoding, limit=5 * MIB, step=STEP)
    pieces = list(decode_all(decoder, body, raw_chunk=1000))
    assert b"".join(pieces) == page and max(len(p) for p in pieces) <= STEP
    assert decoder.decoded_bytes == len(page)


def test_several_gzip_members_and_trailing_padding() -> None:
    body = gzip.compress(b"one ") + gzip.compress(b"two") + b"\x00" * 16
    assert b"".join(decode_all(BoundedDecoder("gzip", limit=MIB), body, raw_chunk=7)) == b"one two"


def test_corrupt_body_is_unsupported_content() -> None:
    with pytest.raises(FetchError) as caught:
        list(decode_all(BoundedDecoder("gzip", limit=MIB), b"this is not gzip at all"))
    assert caught.value.code == UNSUPPORTED_CONTENT
