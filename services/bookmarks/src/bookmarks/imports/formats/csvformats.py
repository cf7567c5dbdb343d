"""Pocket, Instapaper and Raindrop CSV exports: one record → one item, header = line 1.

Columns are found by name (case-insensitive, any order, unknown columns ignored), so small layout
changes between export versions do not break an import.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from typing import BinaryIO, Final

from bookmarks.imports.formats.model import (
    MAX_DESCRIPTION,
    MAX_NOTES,
    MAX_TITLE,
    ImportFormatError,
    ImportHighlight,
    ImportItem,
    clean_path,
    clean_tags,
    clean_text,
    from_unix,
    invalid,
    parse_iso,
    web_url,
    with_highlights,
)
from bookmarks.imports.formats.text import BoundedLines, decode_stream

__all__ = ["parse_instapaper", "parse_pocket", "parse_raindrop", "raindrop_highlights", "read_header"]

MAX_COLUMNS: Final = 64

Row = dict[str, str]


def read_header(line: str) -> list[str]:
    """Column names of a CSV header line, lower-cased, BOM and blanks stripped."""
    try:
        row = next(csv.reader([line.splitlines()[0] if line else ""]), [])
    except csv.Error:
        return []
    return [name.replace("\ufeff", "").strip().lower() for name in row]


def iter_rows(fp: BinaryIO, fmt: str, required: tuple[str, ...]) -> Iterator[tuple[int, Row]]:
    """(first line of the record, {column: value}) for every non-blank record after the header."""
    lines = BoundedLines(decode_stream(fp))
    reader = csv.reader(iter(lines), strict=False)
    header = _header(reader, fmt, required)
    while True:
        lines.start_record()
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ImportFormatError(f"Line {start}: the CSV record cannot be read ({exc}).") from None
        if any(value.strip() for value in row):
            yield start, dict(zip(header, row, strict=False))


def _header(reader: Iterator[list[str]], fmt: str, required: tuple[str, ...]) -> list[str]:
    try:
        raw = next(reader)
    except StopIteration:
        raise ImportFormatError("The file is empty.") from None
    except csv.Error as exc:
        raise ImportFormatError(f"The CSV header cannot be read ({exc}).") from None
    if len(raw) > MAX_COLUMNS:
        raise ImportFormatError(f"The CSV header has {len(raw):,} columns; a {fmt} export has at most {MAX_COLUMNS}.")
    header = [name.replace("\ufeff", "").strip().lower() for name in raw]
    missing = [name for name in required if name not in header]
    if missing:
        raise ImportFormatError(f"This is not a {fmt} file: the header lacks the column(s) {', '.join(missing)}.")
    return header


def _items(
    fp: BinaryIO, fmt: str, required: tuple[str, ...], build: Callable[[int, Row], ImportItem]
) -> Iterator[ImportItem]:
    for line, row in iter_rows(fp, fmt, required):
        url = row.get("url", "").strip()
        yield build(line, row) if url else invalid(line, "", "The record has no URL.")


def parse_pocket(fp: BinaryIO) -> Iterator[ImportItem]:
    """``title,url,time_added,tags,status``: tags ``|``-separated, status ``unread``/``archive``."""
    return _items(fp, "pocket-csv", ("url",), _pocket_item)


def _pocket_item(line: int, row: Row) -> ImportItem:
    warnings: list[str] = []
    url = row["url"].strip()
    title = clean_text(row.get("title"), MAX_TITLE, "title", warnings)
    status = row.get("status", "").strip().lower()
    return ImportItem(
        line=line,
        url=url,
        title=None if title == url else title,  # Pocket writes the URL when it never learned a title
        user_tags=clean_tags(row.get("tags", "").split("|"), warnings),
        is_archived=True if status == "archive" else False if status == "unread" else None,
        saved_at=from_unix(row.get("time_added")),
        warnings=tuple(warnings),
    )


def parse_instapaper(fp: BinaryIO) -> Iterator[ImportItem]:
    """``URL,Title,Selection,Folder,Timestamp[,Tags]``: Folder ``Unread``/``Archive``/``Starred``/a folder."""
    return _items(fp, "instapaper-csv", ("url",), _instapaper_item)


def _instapaper_item(line: int, row: Row) -> ImportItem:
    warnings: list[str] = []
    url = row["url"].strip()
    folder = row.get("folder", "").strip()
    kind = folder.lower()
    title = clean_text(row.get("title"), MAX_TITLE, "title", warnings)
    return ImportItem(
        line=line,
        url=url,
        title=None if title == url else title,
        description=clean_text(row.get("selection"), MAX_DESCRIPTION, "description", warnings),
        user_tags=clean_tags(_instapaper_tags(row.get("tags", "")), warnings),
        collection_paths=() if kind in ("", "unread", "archive", "starred") else (clean_path([folder], warnings),),
        is_favorite=True if kind == "starred" else None,
        is_archived=True if kind == "archive" else False if kind == "unread" else None,
        saved_at=from_unix(row.get("timestamp")),
        warnings=tuple(warnings),
    )


def _instapaper_tags(raw: str) -> list[str]:
    """Instapaper writes tags as a JSON list (``["a","b"]``); a plain comma list is accepted too."""
    text = raw.strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return [
                tag if isinstance(tag, str) else str(tag.get("name", "")) if isinstance(tag, dict) else ""
                for tag in parsed
            ]
    return text.split(",")


def parse_raindrop(fp: BinaryIO) -> Iterator[ImportItem]:
    """``id,title,note,excerpt,url,folder,tags,created,cover,highlights,favorite``; folder ``A/B``."""
    return _items(fp, "raindrop-csv", ("url",), _raindrop_item)


def _raindrop_item(line: int, row: Row) -> ImportItem:
    warnings: list[str] = []
    folder = [name for name in row.get("folder", "").split("/") if name.strip()]
    if [name.strip().lower() for name in folder] == ["unsorted"]:
        folder = []  # Raindrop's inbox, not a folder the user made
    favorite = row.get("favorite", "").strip().lower()
    item = ImportItem(
        line=line,
        url=row["url"].strip(),
        title=clean_text(row.get("title"), MAX_TITLE, "title", warnings),
        description=clean_text(row.get("excerpt"), MAX_DESCRIPTION, "description", warnings),
        notes=clean_text(row.get("note"), MAX_NOTES, "notes", warnings),
        user_tags=clean_tags(row.get("tags", "").split(","), warnings),
        collection_paths=(clean_path(folder, warnings),) if folder else (),
        is_favorite=True if favorite == "true" else False if favorite == "false" else None,
        saved_at=parse_iso(row.get("created")),
        thumbnail_url=web_url(row.get("cover")),
        warnings=tuple(warnings),
    )
    return with_highlights(item, raindrop_highlights(row.get("highlights", "")))


_RAINDROP_MARK: Final = re.compile(r"^(Highlight|Note):[ \t]?", re.IGNORECASE)


def raindrop_highlights(cell: str) -> list[ImportHighlight]:
    """Raindrop's ``highlights`` cell: each highlight starts with a line ``Highlight: text`` (more lines
    continue it), optionally followed by ``Note: text``; a cell without those marks holds one highlight
    per paragraph (blank-line separated)."""
    text = cell.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return []
    if not any(_RAINDROP_MARK.match(line) for line in text.split("\n")):
        return [ImportHighlight(quote=p) for p in re.split(r"\n[ \t]*\n", text) if p.strip()]
    found: list[list[list[str]]] = []  # per highlight: [quote lines, note lines]
    part = 0
    for line in text.split("\n"):
        mark = _RAINDROP_MARK.match(line)
        if mark is not None and mark.group(1).lower() == "highlight":
            found.append([[line[mark.end() :]], []])
            part = 0
        elif mark is not None and found:
            found[-1][1].append(line[mark.end() :])
            part = 1
        elif found:
            found[-1][part].append(line)
    return [ImportHighlight(quote="\n".join(q).strip(), note="\n".join(n).strip()) for q, n in found]
