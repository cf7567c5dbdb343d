"""The export formats of docs/api-guide.md, section 13 as incremental writers (pure: text in, text out).

A writer turns the library into text piece by piece: ``head()`` once, then its batches, ``tail()`` once;
nothing is kept between calls except where the Netscape writer is in the folder tree. Three kinds, by
what they are given:

- CSV and Netscape (:class:`RecordWriter`): ``batch(bookmarks)``, whole records, oldest first or grouped
  by folder (``by_folder``);
- Markdown and Web Annotations (:mod:`bookmarks.exports.annotated`): ``annotated(items)``, each bookmark
  with highlights or notes (its link, title and notes) with its live highlights;
- JSON (:class:`JsonWriter`): ``documents(items)``, each bookmark's and highlight's JSON text as
  PostgreSQL rendered it.

docs/decisions/0048-exports-from-one-snapshot.md explains the choices.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Final, Protocol

from bookmarks.api import wire
from bookmarks.domain.model import BOOKMARK_FIELDS, Bookmark
from bookmarks.exports.annotated import AnnotationsWriter, MarkdownWriter
from bookmarks.exports.folders import Folder, FolderTree, first_folder
from bookmarks.exports.queries import Document
from bookmarks.imports.formats.jsonformat import EXPORT_VERSION

__all__ = [
    "FORMATS", "CsvWriter", "ExportWriter", "JsonWriter", "NetscapeWriter", "RecordWriter", "safe_cell", "writer_for",
]  # fmt: skip


class RecordWriter(Protocol):
    """A format written from whole records (CSV, Netscape)."""

    media_type: str
    extension: str
    by_folder: bool  # rows must come grouped by Netscape folder (pre-order rank), not oldest first

    def head(self) -> str: ...

    def batch(self, bookmarks: Sequence[Bookmark]) -> str: ...

    def tail(self) -> str: ...


# ---- JSON (version 1, the shape bookmarks.imports.formats.jsonformat reads) --------------------------------------


class JsonWriter:
    """Each bookmark is the API's Bookmark resource without ``ownerUid`` (a file is portable) and with
    ``highlights``, its live highlights as the API's Highlight resources. Both come rendered by PostgreSQL
    (``exports.queries.document_batches`` and ``with_highlight_documents``, api/wire.py's plans): the
    writer only joins their texts."""

    media_type = "application/json"
    extension = "json"

    def __init__(self, tree: FolderTree, *, is_pro: bool, exported_at: datetime) -> None:
        self._tree, self.is_pro, self._exported_at = tree, is_pro, exported_at
        self._first = True

    def head(self) -> str:
        collections = ",\n".join(_dumps(wire.collection(f.collection)) for f in self._tree.folders)
        return (
            f'{{"version": {EXPORT_VERSION}, "exportedAt": {_dumps(wire.iso(self._exported_at))},\n'
            f'"collections": [{chr(10) + collections + chr(10) if collections else ""}],\n"bookmarks": ['
        )

    def documents(self, items: Sequence[tuple[Document, Sequence[Document]]]) -> str:
        """Bookmark documents (still open) each with its highlights' documents."""
        if not items:
            return ""
        lines = ",\n".join(f'{b.text},"highlights":[{",".join(h.text for h in hs)}]}}' for b, hs in items)
        prefix, self._first = ("\n" if self._first else ",\n"), False
        return prefix + lines

    def tail(self) -> str:
        return "]}\n" if self._first else "\n]}\n"


def _dumps(value: object) -> str:
    # The API's own encoder (pydantic-core, in Rust): a 100,000-bookmark export spent ~15 µs per bookmark
    # in json.dumps alone. Compact separators; non-ASCII characters as they are (UTF-8).
    return wire.dumps(value).decode()


# ---- CSV ------------------------------------------------------------------------------------------------

CSV_COLUMNS: Final = (
    "url", "title", "description", "notes", "tags", "collections", "favorite", "archived",
    "time_added", "saved_at", "last_opened_at", "created_at", "updated_at", "thumbnail_url",
    "domain", "summary", "ai_tags", "enrichment_status", "client_bookmark_id",
)  # fmt: skip
# The record's fields the columns above already show (some under names of their own, client_saved_at twice).
CSV_SHOWN: Final = frozenset({
    "url", "title", "description", "notes", "user_tags", "collection_ids", "is_favorite", "is_archived",
    "client_saved_at", "last_opened_at", "created_at", "updated_at", "thumbnail_url", "domain", "summary",
    "tags", "enrichment_status", "client_bookmark_id",
})  # fmt: skip
# Fields a CSV row leaves out: the account, the server's bookkeeping, and the Pro-gated saveWhy (a CSV has
# no plan to gate on). Every other declared wire field follows the columns above under its own name, so
# a new field reaches the CSV export without an edit here (docs/decisions/0123-new-fields-in-exports.md).
CSV_LEFT_OUT: Final = frozenset(
    {"owner_uid", "normalized_url", "snapshot_status", "last_error_code", "enriched_at"}
    | {f.name for f in BOOKMARK_FIELDS if f.spec.pro_gated or not f.spec.on_wire}
)
CSV_EXTRA_FIELDS: Final = tuple(f.name for f in BOOKMARK_FIELDS if f.name not in CSV_SHOWN | CSV_LEFT_OUT)
# A cell a spreadsheet would run as a formula (OWASP "CSV injection"): prefixed with an apostrophe.
_FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r", "\n")


def safe_cell(value: str) -> str:
    return "'" + value if value.startswith(_FORMULA_START) else value


class CsvWriter:
    media_type = "text/csv; charset=utf-8"
    extension = "csv"
    by_folder = False

    def __init__(self, tree: FolderTree, *, is_pro: bool, exported_at: datetime) -> None:
        del is_pro, exported_at
        self._folders = tree.by_id()

    def head(self) -> str:
        # The BOM makes spreadsheet programs read UTF-8; the import parsers skip it.
        return "\ufeff" + self._rows([[*CSV_COLUMNS, *CSV_EXTRA_FIELDS]])

    def batch(self, bookmarks: Sequence[Bookmark]) -> str:
        return self._rows([[safe_cell(v) for v in self.row(b)] for b in bookmarks]) if bookmarks else ""

    def tail(self) -> str:
        return ""

    def row(self, b: Bookmark) -> list[str]:
        paths = ["/".join(self._folders[cid].path) for cid in b.collection_ids if cid in self._folders]
        return [
            b.url,
            b.title or "",
            b.description or "",
            b.notes or "",
            "|".join(b.user_tags),
            "|".join(paths),
            _flag(b.is_favorite),
            _flag(b.is_archived),
            str(_unix(b.client_saved_at or b.created_at)),
            _iso(b.client_saved_at),
            _iso(b.last_opened_at),
            _iso(b.created_at),
            _iso(b.updated_at),
            b.thumbnail_url or "",
            b.domain,
            b.summary or "",
            "|".join(b.tags),
            b.enrichment_status,
            b.client_bookmark_id,
            *(_cell(getattr(b, name)) for name in CSV_EXTRA_FIELDS),
        ]

    @staticmethod
    def _rows(rows: list[list[str]]) -> str:
        out = io.StringIO()
        csv.writer(out).writerows(rows)  # RFC 4180: quotes where needed, CRLF line ends
        return out.getvalue()


def _cell(value: Any) -> str:
    """A declared field's value as CSV text, written as the API writes it (lists ``|``-separated)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return _flag(value)
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, tuple):
        return "|".join(value)
    return str(value)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _iso(ts: datetime | None) -> str:
    return wire.iso(ts) or ""


def _unix(ts: datetime) -> int:
    return int(ts.timestamp())


# ---- Netscape bookmark file (what every browser imports) -------------------------------------------------

NETSCAPE_HEAD: Final = (
    "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n"
    "<!-- This is an automatically generated file.\n"
    "     It will be read and overwritten.\n"
    "     DO NOT EDIT! -->\n"
    '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">\n'
    "<TITLE>Bookmarks</TITLE>\n"
    "<H1>Bookmarks</H1>\n"
    "<DL><p>\n"
)


class NetscapeWriter:
    """Folders are written in pre-order; rows must arrive grouped by the rank of their first live
    collection (no collection first: the top level), so each folder is opened and closed once."""

    media_type = "text/html; charset=utf-8"
    extension = "html"
    by_folder = True

    def __init__(self, tree: FolderTree, *, is_pro: bool, exported_at: datetime) -> None:
        del is_pro, exported_at
        self._folders = tree.folders
        self._index = tree.by_id()
        self._next = 0  # folders[_next] is the next folder to open
        self._open: list[Folder] = []

    def head(self) -> str:
        return NETSCAPE_HEAD

    def batch(self, bookmarks: Sequence[Bookmark]) -> str:
        parts: list[str] = []
        for b in bookmarks:
            folder = first_folder(self._index, b.collection_ids)
            if folder is not None:
                while self._next < folder.rank:
                    parts.append(self._advance())
            parts.append(self._link(b, len(self._open) + 1))
        return "".join(parts)

    def tail(self) -> str:
        parts = [self._advance() for _ in range(self._next, len(self._folders))]
        parts.append(self._close_to(0))
        return "".join(parts) + "</DL><p>\n"

    def _advance(self) -> str:
        """Open the next folder in pre-order, first closing the folders it is not inside."""
        folder = self._folders[self._next]
        self._next += 1
        closing = self._close_to(folder.depth - 1)
        self._open.append(folder)
        c, pad = folder.collection, _pad(folder.depth)
        dates = f'ADD_DATE="{_unix(c.created_at)}" LAST_MODIFIED="{_unix(c.updated_at)}"'
        return f"{closing}{pad}<DT><H3 {dates}>{_text(c.name)}</H3>\n{pad}<DL><p>\n"

    def _close_to(self, depth: int) -> str:
        parts = []
        while len(self._open) > depth:
            parts.append(f"{_pad(len(self._open))}</DL><p>\n")
            self._open.pop()
        return "".join(parts)

    @staticmethod
    def _link(b: Bookmark, depth: int) -> str:
        attrs = [
            f'HREF="{_attr(b.url)}"',
            f'ADD_DATE="{_unix(b.client_saved_at or b.created_at)}"',
            f'LAST_MODIFIED="{_unix(b.updated_at)}"',
        ]
        if b.last_opened_at is not None:
            attrs.append(f'LAST_VISIT="{_unix(b.last_opened_at)}"')
        if b.user_tags:
            attrs.append(f'TAGS="{_attr(",".join(b.user_tags))}"')
        pad = _pad(depth)
        line = f"{pad}<DT><A {' '.join(attrs)}>{_text(b.title or b.url)}</A>\n"
        return line + (f"{pad}<DD>{_text(b.description)}\n" if b.description else "")


def _pad(depth: int) -> str:
    return "    " * depth


def _attr(value: str) -> str:
    return html.escape(value, quote=True).replace("\n", "&#10;").replace("\r", "&#13;")


def _text(value: str) -> str:
    # One line per element: a newline inside a title or description would look like a new entry to
    # line-based importers, so it is written as a character reference.
    return html.escape(value, quote=False).replace("\r\n", "\n").replace("\r", "\n").replace("\n", "&#10;")


ExportWriter = RecordWriter | MarkdownWriter | AnnotationsWriter | JsonWriter
_Writers = type[JsonWriter] | type[CsvWriter] | type[NetscapeWriter] | type[MarkdownWriter] | type[AnnotationsWriter]
FORMATS: Final[dict[str, _Writers]] = {
    "netscape": NetscapeWriter,
    "json": JsonWriter,
    "csv": CsvWriter,
    "markdown": MarkdownWriter,
    "annotations": AnnotationsWriter,
}


def writer_for(fmt: str, tree: FolderTree, *, is_pro: bool, exported_at: datetime) -> ExportWriter:
    return FORMATS[fmt](tree, is_pro=is_pro, exported_at=exported_at)
