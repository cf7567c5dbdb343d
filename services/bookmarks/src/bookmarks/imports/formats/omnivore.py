"""Omnivore's export: a ZIP holding ``metadata_<from>_to_<to>.json`` files (a JSON array each) next to
``content/`` files (not read) and ``highlights/<slug>.md`` files: an article's highlights as Markdown, each
a block quote (``> quote``) followed by its note. One metadata file on its own (unzipped, or several merged
into one array as some migration guides suggest) is read as well. An entry may also carry a
``highlights`` array of Omnivore's Highlight objects (``quote``, ``annotation``, ``prefix``, ``suffix``,
``type``), as exports made through Omnivore's API have it.

The ZIP is read defensively: the entry count is checked from the end-of-central-directory record
before ``zipfile`` builds its index, every metadata entry is decompressed as a stream and cut off
past a per-entry and a total limit (whatever its header claims), and entry names that climb out of the
archive (``../``), are absolute or use backslashes are refused (reported as invalid items). Nothing is
ever written to disk.
"""

from __future__ import annotations

import codecs
import lzma
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, BinaryIO, Final

from bookmarks.imports.formats.jsonstream import JsonStream
from bookmarks.imports.formats.model import (
    MAX_DESCRIPTION,
    MAX_TITLE,
    ImportFormatError,
    ImportHighlight,
    ImportItem,
    clean_tags,
    clean_text,
    invalid,
    parse_iso,
    web_url,
    with_highlights,
)
from bookmarks.imports.formats.text import CHUNK, decode_stream

__all__ = ["ZipLimits", "highlights_markdown", "parse_omnivore"]

_METADATA: Final = re.compile(r"metadata_(\d+)?.*\.json", re.IGNORECASE)
_HIGHLIGHTS: Final = re.compile(r"(?:.*/)?highlights/([^/]+)\.md", re.IGNORECASE)
MAX_HIGHLIGHTS_FILE_BYTES: Final = 16 * 1024 * 1024
# What zipfile and the decompressors raise on a damaged archive (ValueError: e.g. a negative seek).
_ZIP_ERRORS: Final = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    struct.error,
    EOFError,
    NotImplementedError,
    RuntimeError,
    OSError,
    ValueError,
)
_EOCD: Final = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR: Final = struct.Struct("<4sLQL")
_ZIP64_EOCD: Final = struct.Struct("<4sQ2H2L4Q")


@dataclass(frozen=True, slots=True)
class ZipLimits:
    max_entries: int = 100_000
    max_entry_bytes: int = 64 * 1024 * 1024
    max_total_bytes: int = 256 * 1024 * 1024


def parse_omnivore(fp: BinaryIO, limits: ZipLimits = ZipLimits()) -> Iterator[ImportItem]:
    """The export ZIP, or one of its ``metadata_*.json`` files (or several merged into one array) alone."""
    magic = fp.read(4)
    fp.seek(0)
    if magic.startswith(b"PK"):
        return _parse_zip(fp, limits)
    return _parse_metadata_file(fp)


def _parse_metadata_file(fp: BinaryIO) -> Iterator[ImportItem]:
    for position, (_line, element) in enumerate(JsonStream(decode_stream(fp)).iter_array(), start=1):
        yield _item(position, element)


def _parse_zip(fp: BinaryIO, limits: ZipLimits) -> Iterator[ImportItem]:
    _check_entry_count(fp, limits)
    try:
        archive = zipfile.ZipFile(fp)
    except _ZIP_ERRORS as exc:
        raise ImportFormatError(f"The file is not a readable ZIP archive ({exc}).") from None
    with archive:
        entries = sorted((info for info in archive.infolist() if _is_metadata(info.filename)), key=_order)
        if not entries:
            raise ImportFormatError("The ZIP holds no metadata_*.json file; it is not an Omnivore export.")
        yield from _read_entries(archive, entries, limits)


def _highlight_files(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """``highlights/<slug>.md`` entries by slug (names that are unsafe are left out)."""
    found = {}
    for info in archive.infolist():
        match = _HIGHLIGHTS.fullmatch(info.filename)
        if match is not None and _unsafe(info.filename) is None:
            found[match.group(1)] = info
    return found


def _markdown_reader(archive: zipfile.ZipFile, budget: _Budget) -> Callable[[str], str]:
    files = _highlight_files(archive)

    def read(slug: str) -> str:
        info = files.get(slug)
        if info is None:
            return ""
        if info.file_size > MAX_HIGHLIGHTS_FILE_BYTES:
            raise ImportFormatError(
                f"ZIP entry {info.filename[:200]!r} is larger than {MAX_HIGHLIGHTS_FILE_BYTES:,} bytes."
            )
        with archive.open(info) as raw:
            return "".join(budget.text(raw, info.filename))

    return read


def _read_entries(archive: zipfile.ZipFile, entries: list[zipfile.ZipInfo], limits: ZipLimits) -> Iterator[ImportItem]:
    position, budget = 0, _Budget(limits)
    markdown = _markdown_reader(archive, budget)
    for info in entries:
        if (problem := _unsafe(info.filename)) is not None:
            position += 1
            yield invalid(position, "", f"ZIP entry {info.filename[:200]!r} {problem}; it was not read.")
            continue
        if info.file_size > limits.max_entry_bytes:
            raise ImportFormatError(
                f"ZIP entry {info.filename[:200]!r} unpacks to more than {limits.max_entry_bytes:,} bytes."
            )
        try:
            with archive.open(info) as raw:
                stream = JsonStream(budget.text(raw, info.filename))
                for _line, element in stream.iter_array():
                    position += 1
                    yield _item(position, element, markdown)
        except ImportFormatError:
            raise
        except _ZIP_ERRORS as exc:
            raise ImportFormatError(f"ZIP entry {info.filename[:200]!r} cannot be read ({exc}).") from None


class _Budget:
    """Decompressed bytes actually produced, per entry and in total (headers can lie)."""

    def __init__(self, limits: ZipLimits) -> None:
        self._limits = limits
        self._total = 0

    def text(self, raw: IO[bytes], name: str) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        entry = 0
        while chunk := raw.read(CHUNK):
            entry += len(chunk)
            self._total += len(chunk)
            if entry > self._limits.max_entry_bytes:
                raise ImportFormatError(
                    f"ZIP entry {name[:200]!r} unpacks to more than {self._limits.max_entry_bytes:,} bytes."
                )
            if self._total > self._limits.max_total_bytes:
                raise ImportFormatError(
                    f"The ZIP unpacks to more than {self._limits.max_total_bytes:,} bytes of metadata."
                )
            yield decoder.decode(chunk)
        yield decoder.decode(b"", final=True)


def _check_entry_count(fp: BinaryIO, limits: ZipLimits) -> None:
    """Refuse an archive with too many entries before ``zipfile`` builds an index of all of them."""
    size = fp.seek(0, 2)
    tail_start = max(0, size - 65_557)
    fp.seek(tail_start)
    tail = fp.read()
    fp.seek(0)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        raise ImportFormatError("The file is not a readable ZIP archive (no end of central directory).")
    count = _EOCD.unpack_from(tail, at)[4]
    locator_at = at - _ZIP64_LOCATOR.size
    if locator_at >= 0 and tail[locator_at : locator_at + 4] == b"PK\x06\x07":
        count = max(count, _zip64_count(fp, _ZIP64_LOCATOR.unpack_from(tail, locator_at)[2]))
    if count > limits.max_entries:
        raise ImportFormatError(f"The ZIP has {count:,} entries; at most {limits.max_entries:,} are accepted.")


def _zip64_count(fp: BinaryIO, offset: int) -> int:
    fp.seek(offset)
    record = fp.read(_ZIP64_EOCD.size)
    fp.seek(0)
    if len(record) < _ZIP64_EOCD.size or record[:4] != b"PK\x06\x06":
        raise ImportFormatError("The file is not a readable ZIP archive (damaged ZIP64 directory).")
    return int(_ZIP64_EOCD.unpack(record)[7])


def _is_metadata(name: str) -> bool:
    return _METADATA.fullmatch(name.replace("\\", "/").rsplit("/", 1)[-1]) is not None


def _order(info: zipfile.ZipInfo) -> tuple[int, str]:
    match = _METADATA.fullmatch(info.filename.replace("\\", "/").rsplit("/", 1)[-1])
    first = match.group(1) if match is not None else None
    return (int(first[:18]) if first else 0, info.filename)


def _unsafe(name: str) -> str | None:
    if "\\" in name or "\x00" in name:
        return "has a backslash or NUL in its name"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "has an absolute path"
    if ".." in name.split("/"):
        return "climbs out of the archive ('..')"
    return None


def _no_markdown(slug: str) -> str:
    del slug
    return ""


def _item(position: int, element: object, markdown: Callable[[str], str] = _no_markdown) -> ImportItem:
    if not isinstance(element, dict):
        return invalid(position, "", "The entry is not a JSON object.")
    url = element.get("url")
    if not isinstance(url, str) or not url.strip():
        return invalid(position, "", "The entry has no URL.")
    warnings: list[str] = []
    state = element.get("state")
    slug = element.get("slug")
    found = _listed_highlights(element.get("highlights"))
    if not found and isinstance(slug, str) and slug:
        found = highlights_markdown(markdown(slug))
    item = ImportItem(
        line=position,
        url=url.strip(),
        title=clean_text(_string(element.get("title")), MAX_TITLE, "title", warnings),
        description=clean_text(_string(element.get("description")), MAX_DESCRIPTION, "description", warnings),
        user_tags=clean_tags(_labels(element.get("labels")), warnings),
        is_archived=state.strip().lower() == "archived" if isinstance(state, str) and state.strip() else None,
        saved_at=parse_iso(element.get("savedAt")),
        thumbnail_url=web_url(element.get("thumbnail")),
        warnings=tuple(warnings),
    )
    return with_highlights(item, found)


def _listed_highlights(raw: object) -> list[ImportHighlight]:
    """Omnivore's Highlight objects: the ``HIGHLIGHT`` ones with a quote (a ``NOTE`` or a ``REDACTION``
    marks no passage)."""
    if not isinstance(raw, list):
        return []
    found = []
    for h in raw:
        if not isinstance(h, dict) or not isinstance(h.get("quote"), str) or not h["quote"].strip():
            continue
        if str(h.get("type") or "HIGHLIGHT").upper() != "HIGHLIGHT":
            continue
        found.append(
            ImportHighlight(
                quote=h["quote"],
                note=_string(h.get("annotation")) or "",
                prefix=_string(h.get("prefix")) or "",
                suffix=_string(h.get("suffix")) or "",
            )
        )
    return found


def highlights_markdown(text: str) -> list[ImportHighlight]:
    """An Omnivore ``highlights/<slug>.md`` file: each highlight a block quote (``> quote``, over one or
    more lines), followed by its note as plain paragraphs until the next block quote."""
    found: list[tuple[list[str], list[str]]] = []
    in_quote = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line.startswith(">"):
            body = line[2:] if line.startswith("> ") else line[1:]
            if not in_quote:
                found.append(([], []))
            found[-1][0].append(body)
            in_quote = True
        else:
            if found and (line.strip() or found[-1][1]):
                found[-1][1].append(line)
            in_quote = False
    return [
        ImportHighlight(quote="\n".join(q).strip(), note="\n".join(n).strip()) for q, n in found if "\n".join(q).strip()
    ]


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _labels(raw: object) -> list[str]:
    """Labels are names (``["a"]``); some exports wrote label objects (``[{"name": "a"}]``)."""
    if not isinstance(raw, list):
        return []
    names = (label.get("name") if isinstance(label, dict) else label for label in raw)
    return [name for name in names if isinstance(name, str)]
