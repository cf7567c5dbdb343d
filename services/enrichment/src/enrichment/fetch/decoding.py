"""Bounded ``Content-Encoding`` decoding: the size cap holds while inflating, not after.

A decompressor asked for "everything" turns a 1 KiB ``gzip, gzip`` bomb into hundreds of MiB in one
call. Here every call is asked for at most ``step`` bytes (``max_length``), the decoded total is counted
as it grows and decoding stops with ``too-large`` the moment it passes the cap; the compressed input is
capped too, so a stream that inflates to nothing cannot keep the worker busy either.

Supported: ``identity``, ``gzip`` (also ``x-gzip``, several members), ``deflate`` (zlib-wrapped or raw,
as servers send both) and ``br`` (Brotli, asked for ``step`` bytes at a time through the decoder's
output buffer limit). Refused as ``unsupported-content`` (not retriable, the page will not change on
a retry): stacked encodings such as ``gzip, gzip`` and any other encoding (``zstd``, ``compress`` are
never requested: :data:`ACCEPT_ENCODING` says what we can read).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Final

import brotli

from enrichment.fetch.errors import TOO_LARGE, UNSUPPORTED_CONTENT, FetchError

ACCEPT_ENCODING: Final = "gzip, deflate, br"
DEFAULT_STEP_BYTES: Final = 64 * 1024

_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS
_ZLIB_WBITS: Final = zlib.MAX_WBITS
_RAW_DEFLATE_WBITS: Final = -zlib.MAX_WBITS
_WBITS_FOR: Final = {"gzip": _GZIP_WBITS, "x-gzip": _GZIP_WBITS, "deflate": _ZLIB_WBITS}
BROTLI: Final = "br"
_SUPPORTED: Final = frozenset({*_WBITS_FOR, BROTLI})


def parse_content_encoding(header: str | None) -> str | None:
    """The one encoding to undo (None for identity); FetchError for stacked or unknown encodings."""
    codings = [c.strip().lower() for c in (header or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > 1:
        raise FetchError(UNSUPPORTED_CONTENT, f"Stacked content encodings ({', '.join(codings)}) are refused.")
    if not codings:
        return None
    if codings[0] not in _SUPPORTED:
        raise FetchError(UNSUPPORTED_CONTENT, f"Content encoding {codings[0][:40]!r} is not supported.")
    return codings[0]


class BoundedDecoder:
    """Feed raw body bytes, get decoded pieces of at most ``step`` bytes; ``too-large`` past ``limit``."""

    def __init__(self, content_encoding: str | None, *, limit: int, step: int = DEFAULT_STEP_BYTES) -> None:
        self.encoding = parse_content_encoding(content_encoding)
        self.limit = limit
        self.step = step
        self.raw_bytes = 0
        self.decoded_bytes = 0
        self._inflater = self._new_inflater()
        self._brotli = brotli.Decompressor() if self.encoding == BROTLI else None
        self._started = False
        self._members = 1
        self._ignore_rest = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        self.raw_bytes += len(data)
        if self.raw_bytes > self.limit:
            raise self._too_large()
        if self.encoding is None:
            yield from self._count(data[i : i + self.step] for i in range(0, len(data), self.step))
            return
        yield from self._count(self._decode(data))

    def finish(self) -> Iterator[bytes]:
        """Whatever the decompressor still holds (still bounded; a truncated stream keeps what it gave)."""
        if self.encoding is not None:
            yield from self._count(self._decode(b""))

    def _decode(self, data: bytes) -> Iterator[bytes]:
        return self._unbrotli(self._brotli, data) if self._brotli is not None else self._inflate(data)

    def _unbrotli(self, decompressor: brotli.Decompressor, data: bytes) -> Iterator[bytes]:
        """About ``step`` bytes per call (the output buffer stops growing there), until the decoder has
        nothing more to give; input goes in only when the decoder accepts it."""
        pending = data
        while True:
            feed, pending = (pending, b"") if decompressor.can_accept_more_data() else (b"", pending)
            try:
                out = decompressor.process(feed, output_buffer_limit=self.step)
            except brotli.error as exc:
                raise FetchError(UNSUPPORTED_CONTENT, f"The br body is corrupt: {exc}.") from exc
            if out:
                yield out
            elif not pending:
                return
            elif not feed:  # nothing given back and no input taken: it would never move again
                raise FetchError(UNSUPPORTED_CONTENT, "The br body could not be decoded.")

    def _count(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            self.decoded_bytes += len(piece)
            if self.decoded_bytes > self.limit:
                raise self._too_large()
            yield piece

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while True:
            out = self._decompress(pending)
            if out:
                yield out
            pending = b"" if self._ignore_rest else self._inflater.unconsumed_tail
            if self._inflater.eof and not self._ignore_rest:
                pending = self._next_member()
            # A full step may leave output inside zlib even with no input left: ask again.
            if not pending and len(out) < self.step:
                return

    def _decompress(self, data: bytes) -> bytes:
        if self._ignore_rest:
            return b""
        try:
            out = self._inflater.decompress(data, self.step)
        except zlib.error as exc:
            if self.encoding == "deflate" and not self._started:
                # "deflate" without the zlib wrapper, as some servers send it.
                self._inflater = zlib.decompressobj(_RAW_DEFLATE_WBITS)
                self._started = True
                return self._decompress(data)
            if self._members > 1:  # padding after a complete gzip member: ignored, as browsers do
                self._ignore_rest = True
                return b""
            raise FetchError(UNSUPPORTED_CONTENT, f"The {self.encoding} body is corrupt: {exc}.") from exc
        self._started = True
        return out

    def _next_member(self) -> bytes:
        # gzip allows several members back to back; anything after a deflate stream is ignored.
        rest = self._inflater.unused_data
        if self.encoding == "deflate" or not rest:
            return b""
        self._inflater = self._new_inflater()
        self._members += 1
        return rest

    def _new_inflater(self) -> zlib._Decompress:
        return zlib.decompressobj(_WBITS_FOR.get(self.encoding or "", _ZLIB_WBITS))

    def _too_large(self) -> FetchError:
        return FetchError(TOO_LARGE, f"The page is larger than {self.limit} bytes.")
