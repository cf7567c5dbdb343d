"""Import parsers, one per format of docs/api-guide.md, section 13: pure, streaming, bounded in memory.

``iter_items(fp, fmt)`` is the one entry point: ``fp`` is a binary file object (the upload stored on
disk; the ``omnivore`` ZIP needs it seekable), ``fmt`` a name of ``FORMATS`` or ``"auto"``. It yields
``ImportItem``s in file order, each with its ``ordinal``; a whole-file problem is ``ImportFormatError``.

Resuming a crashed import: store the ordinal of the last item whose outcome was committed, and call
``iter_items(fp, fmt, start=ordinal + 1)``. Skipped items are parsed again (file order must be
re-read) but not built into outcomes, validated or written; nothing else about them is redone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice
from typing import BinaryIO, Final

from bookmarks.imports.formats.csvformats import parse_instapaper, parse_pocket, parse_raindrop
from bookmarks.imports.formats.detect import HEAD_BYTES, detect_format
from bookmarks.imports.formats.jsonformat import EXPORT_VERSION, ImportCollection, json_collections, parse_json
from bookmarks.imports.formats.model import (
    FORMATS,
    MAX_COLLECTION_DEPTH,
    ImportFormatError,
    ImportItem,
    finish_item,
    validate_item,
)
from bookmarks.imports.formats.netscape import parse_netscape
from bookmarks.imports.formats.omnivore import ZipLimits, parse_omnivore

__all__ = [
    "EXPORT_VERSION",
    "FORMATS",
    "MAX_COLLECTION_DEPTH",
    "ImportCollection",
    "ImportFormatError",
    "ImportItem",
    "ZipLimits",
    "count_items",
    "detect_format",
    "iter_items",
    "json_collections",
    "resolve_format",
    "validate_item",
]

PARSERS: Final[dict[str, Callable[[BinaryIO], Iterator[ImportItem]]]] = {
    "netscape": parse_netscape,
    "pocket-csv": parse_pocket,
    "omnivore": parse_omnivore,
    "instapaper-csv": parse_instapaper,
    "raindrop-csv": parse_raindrop,
    "json": parse_json,
}


def resolve_format(fp: BinaryIO, fmt: str = "auto") -> str:
    """``fmt`` itself, or for ``auto`` the detected format (the file position is left at the start).

    An empty (or whitespace-only) file is refused whatever the format."""
    if fmt != "auto" and fmt not in PARSERS:
        raise ImportFormatError(f"Unknown format {fmt[:40]!r}; use auto or one of {', '.join(FORMATS)}.")
    fp.seek(0)
    head = fp.read(HEAD_BYTES)
    fp.seek(0)
    if not head.strip():
        raise ImportFormatError("The file is empty.")
    return detect_format(head) if fmt == "auto" else fmt


def iter_items(fp: BinaryIO, fmt: str = "auto", *, start: int = 0, validate: bool = True) -> Iterator[ImportItem]:
    """Items of the file from ordinal ``start`` on; with ``validate`` their URLs are checked."""
    parser = PARSERS[resolve_format(fp, fmt)]
    fp.seek(0)
    for ordinal, item in islice(enumerate(parser(fp)), start, None):
        yield finish_item(item, ordinal, validate=validate)


def count_items(fp: BinaryIO, fmt: str, *, keep: int = 0) -> tuple[int, list[ImportItem]]:
    """How many items ``iter_items(fp, fmt)`` yields, and its first ``keep`` items as it yields them
    (numbered and URL-checked): one pass reads the first batch and counts the rest without building them."""
    parser = PARSERS[resolve_format(fp, fmt)]
    fp.seek(0)
    items = parser(fp)
    first = [finish_item(item, ordinal, validate=True) for ordinal, item in zip(range(keep), items, strict=False)]
    return len(first) + sum(1 for _ in items), first
