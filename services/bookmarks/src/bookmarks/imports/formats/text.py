"""Bytes → text for the text formats, incrementally: charset sniffing, decoding, bounded lines.

Nothing here holds more than one chunk plus one (bounded) line: the file can be any size.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from typing import BinaryIO, Final

from charset_normalizer import from_bytes

from bookmarks.imports.formats.model import ImportFormatError

__all__ = ["CHUNK", "HEAD", "MAX_LINE_CHARS", "BoundedLines", "decode_stream", "sniff_encoding"]

CHUNK: Final = 64 * 1024
HEAD: Final = 64 * 1024
MAX_LINE_CHARS: Final = 1024 * 1024

# CRLF, LF or a lone CR (old Mac tools); a CR ending a chunk waits for the next (it may be a CRLF).
_EOL: Final = re.compile(r"\r\n|\r(?!$)|\n")
_BOMS: Final = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_META_CHARSET: Final = re.compile(rb"<meta[^>]{0,500}?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]{1,40})", re.IGNORECASE)


def sniff_encoding(head: bytes, *, html: bool = False) -> str:
    """The encoding of a file from its first bytes: BOM, then (HTML) the META charset, then UTF-8 if the
    head is valid UTF-8, else charset-normalizer's best guess, else windows-1252 (old browser exports)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    if html and (declared := _declared_charset(head)) is not None:
        return declared
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        best = from_bytes(head).best()
        return best.encoding if best is not None else "cp1252"
    return "utf-8"


def _declared_charset(head: bytes) -> str | None:
    match = _META_CHARSET.search(head)
    if match is None:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
        b"<".decode(name)  # refuses bytes-to-bytes and text-to-text codecs (zlib, base64, rot13)
    except (LookupError, ValueError, TypeError):
        return None
    # A UTF-16 file would have a BOM; without one the META is lying (it was re-saved as 8-bit text).
    return None if name.startswith("utf-16") or name.startswith("utf-32") else name


def decode_stream(fp: BinaryIO, *, html: bool = False) -> Iterator[str]:
    """The file's text in chunks; undecodable bytes become U+FFFD, NUL characters are dropped."""
    head = fp.read(HEAD)
    decoder = codecs.getincrementaldecoder(sniff_encoding(head, html=html))(errors="replace")
    chunk = head
    while chunk:
        text = decoder.decode(chunk)
        if text:
            yield text.replace("\x00", "")
        chunk = fp.read(CHUNK)
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail.replace("\x00", "")


class BoundedLines:
    """Lines (ending kept: the csv module needs it) of a chunked text; a line, or a record of several lines, longer than
    ``max_chars`` ends the file with ImportFormatError instead of growing without bound."""

    def __init__(self, chunks: Iterable[str], max_chars: int = MAX_LINE_CHARS) -> None:
        self._chunks = chunks
        self._max = max_chars
        self.lines_read = 0
        self._record_chars = 0
        self._record_line = 1

    def start_record(self) -> None:
        self._record_chars = 0
        self._record_line = self.lines_read + 1

    def __iter__(self) -> Iterator[str]:
        pending: list[str] = []
        pending_len = 0
        for chunk in self._chunks:
            pos = 0
            if pending and chunk and pending[-1].endswith("\r") and not chunk.startswith("\n"):
                yield self._counted("".join(pending))  # that CR was a lone one after all
                pending, pending_len = [], 0
            while (eol := _EOL.search(chunk, pos)) is not None:
                piece = chunk[pos : eol.end()]
                pos = eol.end()
                if pending:
                    piece = "".join(pending) + piece
                    pending, pending_len = [], 0
                yield self._counted(piece)
            if pos < len(chunk):
                pending.append(chunk[pos:])
                pending_len += len(chunk) - pos
                self._check(pending_len)
        if pending:
            yield self._counted("".join(pending))

    def _counted(self, line: str) -> str:
        self._check(len(line))
        self.lines_read += 1
        self._record_chars += len(line)
        return line

    def _check(self, line_chars: int) -> None:
        if self._record_chars + line_chars > self._max:
            raise ImportFormatError(
                f"The record starting at line {self._record_line} is longer than {self._max:,} characters; "
                "the file is damaged or not a bookmark export."
            )
