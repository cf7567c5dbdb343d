"""``format=auto``: which export a file is, from its first bytes."""

from __future__ import annotations

import re
from typing import Final

from bookmarks.imports.formats.csvformats import read_header
from bookmarks.imports.formats.model import ImportFormatError
from bookmarks.imports.formats.text import sniff_encoding

__all__ = ["HEAD_BYTES", "detect_format"]

HEAD_BYTES: Final = 64 * 1024
_ZIP_MAGIC: Final = (b"PK\x03\x04", b"PK\x05\x06")
_EOL: Final = re.compile(r"[\r\n]")
_OMNIVORE_KEYS: Final = re.compile(r'"(?:savedAt|slug|readingProgress)"\s*:')
_NETSCAPE: Final = re.compile(r"<!DOCTYPE\s+NETSCAPE-Bookmark-file|<DL\b|<DT\b|<A\s+HREF", re.IGNORECASE)


def detect_format(head: bytes) -> str:
    """The format of a file whose first (up to 64 KiB) bytes are ``head``; ImportFormatError if none fits."""
    if not head.strip():
        raise ImportFormatError("The file is empty.")
    if head.startswith(_ZIP_MAGIC):
        return "omnivore"
    text = head.decode(sniff_encoding(head, html=True), errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith("{"):
        return "json"
    if text.startswith("[") and _OMNIVORE_KEYS.search(text):
        return "omnivore"  # one metadata_*.json of an Omnivore export, unzipped
    if text.startswith("<") and _NETSCAPE.search(text):
        return "netscape"
    if (fmt := _csv_format(text)) is not None:
        return fmt
    raise ImportFormatError(
        "The file is not a recognised export: expected a browser bookmark file (HTML), a Pocket, Instapaper "
        "or Raindrop CSV, an Omnivore ZIP or this service's JSON export."
    )


def _csv_format(text: str) -> str | None:
    end = _EOL.search(text)
    if end is None and len(text.encode()) >= HEAD_BYTES:
        return None  # the first line does not even end within the head
    columns = set(read_header(text[: end.start() if end is not None else len(text)]))
    if {"url", "title", "time_added"} <= columns:
        return "pocket-csv"
    if {"url", "title", "selection", "folder"} <= columns:
        return "instapaper-csv"
    if {"url", "folder"} <= columns and columns & {"excerpt", "highlights", "cover", "note"}:
        return "raindrop-csv"
    return None
