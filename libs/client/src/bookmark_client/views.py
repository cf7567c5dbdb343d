"""What the ``bookmarks`` commands show, built on the output layer (:mod:`bookmark_client.ui`)."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

from rich import filesize
from rich.text import Text

from bookmark_client.models import Bookmark, Collection, DuplicateGroup, Highlight, SearchResult, TrashItem
from bookmark_client.tree import collection_names
from bookmark_client.ui import Column, Ui, clean, text

__all__ = [
    "BOOKMARK_COLUMNS",
    "DUPLICATE_COLUMNS",
    "TRASH_COLUMNS",
    "anchor_status",
    "bookmark_rows",
    "duplicate_rows",
    "render_snippet",
    "show_bookmarks",
    "show_duplicates",
    "show_highlights",
    "show_search_result",
    "show_trash",
    "trash_rows",
]

# Display order; priority decides what a narrow terminal drops first (AI tags, then enrichment, …).
BOOKMARK_COLUMNS = (
    Column("ID", priority=1),  # never shortened: the commands take it
    Column("TITLE", priority=0, min_width=32, flexible=True),
    Column("DOMAIN", priority=2, max_width=24),
    Column("TAGS", priority=4, max_width=24),
    Column("AI-TAGS", priority=7, max_width=24),
    Column("COLLECTIONS", priority=5, max_width=24),
    Column("STATE", priority=3),
    Column("ENRICHMENT", priority=6),
    Column("LINK", priority=8),  # linkStatus; blank until the server has checked the link
)

_STATUS_STYLE = {"completed": "ok", "failed": "bad", "deleted": "bad", "pending": "warn", "processing": "warn"}
_LINK_STYLE = {"ok": "ok", "moved": "warn", "blocked": "muted", "gone": "bad", "unreachable": "bad"}


def _state(b: Bookmark) -> str:
    return ",".join(name for name, on in (("archived", b.is_archived), ("favorite", b.is_favorite)) if on)


def bookmark_rows(bookmarks: list[Bookmark], collections: list[Collection]) -> list[list[Text]]:
    by_id = {c.id: c for c in collections}
    rows = []
    for b in bookmarks:
        status = "deleted" if b.deleted else b.enrichment_status
        rows.append(
            [
                text((b.client_bookmark_id, "id"), ("*" if b.pending else "", "warn")),
                text(clean(b.title or b.url).strip()),
                text((b.domain or "", "muted")),
                text((", ".join(b.user_tags), "tag")),
                text((", ".join(b.tags), "tag")),
                text(", ".join(collection_names(b.collection_ids, by_id))),
                text(_state(b)),
                text((status, _STATUS_STYLE.get(status, ""))),
                text((b.link_status or "", _LINK_STYLE.get(b.link_status or "", ""))),
            ]
        )
    return rows


def show_bookmarks(ui: Ui, bookmarks: list[Bookmark], collections: list[Collection]) -> None:
    ui.table(BOOKMARK_COLUMNS, bookmark_rows(bookmarks, collections))
    if any(b.pending for b in bookmarks):
        ui.line(("* not yet synced", "muted"))


TRASH_COLUMNS = (
    Column("ID", priority=1),
    Column("TITLE", priority=0, min_width=32, flexible=True),
    Column("DOMAIN", priority=4, max_width=24),
    Column("DELETED", priority=3),
    Column("PURGE-DATE", priority=2),
)


def utc_time(iso: str, *, with_time: bool = True) -> str:
    """``2026-11-28 08:20`` (UTC) from a server timestamp; the text as given when it is not one."""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return clean(iso)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")


def trash_rows(items: list[TrashItem]) -> list[list[Text]]:
    return [
        [
            text((item.bookmark.client_bookmark_id, "id")),
            text(clean(item.bookmark.title or item.bookmark.url).strip()),
            text((item.bookmark.domain or "", "muted")),
            text(utc_time(item.deleted_at)),
            text((utc_time(item.purge_at, with_time=False), "warn")),
        ]
        for item in items
    ]


def show_trash(ui: Ui, items: list[TrashItem]) -> None:
    """The trash as a table, most recently deleted first: id, title (or URL), domain, when deleted, and
    the day it is purged for good (UTC)."""
    ui.table(TRASH_COLUMNS, trash_rows(items))


DUPLICATE_COLUMNS = (
    Column("KEY", priority=3, max_width=40),
    Column("ID", priority=1),
    Column("TITLE", priority=0, min_width=24, flexible=True),
    Column("SAVED", priority=2),
)


def duplicate_rows(groups: list[DuplicateGroup]) -> list[list[Text]]:
    """One row per member; a group's key on its first member's row only."""
    rows: list[list[Text]] = []
    for group in groups:
        for n, b in enumerate(group.bookmarks):
            rows.append(
                [
                    text((clean(group.key) if n == 0 else "", "muted")),
                    text((b.client_bookmark_id, "id")),
                    text(clean(b.title or b.url).strip()),
                    text(utc_time(b.client_saved_at or b.created_at or "", with_time=False)),
                ]
            )
    return rows


def show_duplicates(ui: Ui, groups: list[DuplicateGroup]) -> None:
    """The duplicate groups as one table: the key the group shares, then each member's id, title (or URL)
    and save date (UTC), oldest first; ``bookmarks merge KEEP ID...`` merges them."""
    ui.table(DUPLICATE_COLUMNS, duplicate_rows(groups))
    count = len(groups)
    ui.note((f"{count} group{'' if count == 1 else 's'}: `bookmarks merge KEEP ID...` keeps one of a group", "muted"))


_MARK = re.compile(r"<mark>(.*?)</mark>", re.S)


def render_snippet(snippet: str, *, emphasis: bool) -> Text:
    """A search snippet: ``<mark>`` becomes a highlight (``[…]`` when ``emphasis`` is off, as on a pipe) and
    entities are decoded; the server escaped everything else, so no other markup can appear."""
    line = Text()
    position = 0
    for match in _MARK.finditer(snippet):
        line.append(clean(html.unescape(snippet[position : match.start()])))
        marked = clean(html.unescape(match.group(1)))
        if emphasis:
            line.append(marked, style="mark")
        else:
            line.append(f"[{marked}]")
        position = match.end()
    line.append(clean(html.unescape(snippet[position:])))
    return line


INDENT = 5
SNIPPET_LINES = 2


def show_search_result(ui: Ui, number: int, result: SearchResult) -> None:
    """Three lines: number, title and id; the URL; the snippet. On a terminal each fits its width."""
    bookmark = result.bookmark
    title = clean(bookmark.title or bookmark.url).strip()
    snippet = render_snippet(result.snippet, emphasis=ui.out_tty) if result.snippet else None
    url = text(" " * INDENT, (bookmark.url, "link"))
    if not ui.out_tty:
        ui.rich_line(text(f"{number:3}. ", title, f"  [{bookmark.client_bookmark_id}]"))
        ui.rich_line(url)
        if snippet is not None:
            ui.rich_line(Text(" " * INDENT) + snippet)
        return
    width = ui.width
    suffix = text("  [", (bookmark.client_bookmark_id, "id"), "]")
    fitted_title = Text(title, style="head")
    fitted_title.truncate(max(8, width - INDENT - len(suffix)), overflow="ellipsis")  # ids are ASCII
    ui.rich_line(text(f"{number:3}. ") + fitted_title + suffix)
    url.truncate(width, overflow="ellipsis")
    ui.rich_line(url)
    for line in _wrapped(ui, snippet, width - INDENT) if snippet is not None else []:
        ui.rich_line(Text(" " * INDENT) + line)


def _wrapped(ui: Ui, snippet: Text, width: int, *, most: int = SNIPPET_LINES) -> list[Text]:
    lines = list(snippet.wrap(ui.out, max(10, width)))
    if len(lines) > most:
        lines = lines[:most]
        last = lines[-1]
        last.rstrip()
        last.append("…")
        last.truncate(width, overflow="ellipsis")
    for line in lines:
        line.rstrip()
    return lines


# A highlight's colour on a terminal (256-colour names; plain with NO_COLOR or on a pipe).
_HIGHLIGHT_STYLE = {"yellow": "yellow", "green": "green", "blue": "blue", "pink": "hot_pink", "purple": "medium_purple"}
# What the server's ``anchor`` says, in words.
_ANCHOR = {
    "exact": ("on the page", "ok"),
    "fuzzy": ("on the page, its text changed", "warn"),
    "orphan": ("not found on the page any more", "bad"),
}
QUOTE_LINES = 4
NOTE_LINES = 3
_BAR = "▌ "


def anchor_status(highlight: Highlight) -> tuple[str, str]:
    """Where the highlight stands on its page, in words, with its style."""
    if highlight.deleted:
        return "deleted", "bad"
    return _ANCHOR.get(highlight.anchor or "", ("not looked for on the page yet", "muted"))


def show_highlights(ui: Ui, highlights: list[Highlight], bookmarks: dict[str, Bookmark]) -> None:
    """Each highlight as a block, a blank line between: the quote (a bar of its colour on a terminal, ``>`` on a
    pipe), its note, then its bookmark's title and id, colour, where it stands on the page, and its id.

    On a terminal the quote and the note are wrapped (at most a few lines, ``…`` where cut) and the title is
    shortened to fit; on a pipe each is one full line."""
    for n, highlight in enumerate(highlights):
        if n:
            ui.line("")
        style = _HIGHLIGHT_STYLE.get(highlight.color, "")
        quote = Text(clean(highlight.quote).strip())
        note = clean(highlight.note).strip()
        if ui.out_tty:
            for line in _wrapped(ui, quote, ui.width - len(_BAR), most=QUOTE_LINES):
                ui.rich_line(text((_BAR, style)) + line)
            if note:
                for number, line in enumerate(_wrapped(ui, Text(note), ui.width - 8, most=NOTE_LINES)):
                    ui.rich_line(text(("  note: " if number == 0 else " " * 8, "muted")) + line)
        else:
            ui.rich_line(text("> ") + quote)
            if note:
                ui.line("  note: ", note)
        ui.rich_line(_highlight_meta(ui, highlight, bookmarks.get(highlight.bookmark_id), style))
    if any(h.pending for h in highlights):
        ui.line("")
        ui.line(("* not yet synced", "muted"))


def _highlight_meta(ui: Ui, highlight: Highlight, bookmark: Bookmark | None, style: str) -> Text:
    status, status_style = anchor_status(highlight)
    title = Text(clean(bookmark.title or bookmark.url).strip() if bookmark is not None else "", style="head")
    rest = text(
        "  [",
        (highlight.bookmark_id, "id"),
        "] · ",
        (highlight.color, style),
        " · ",
        (status, status_style),
        " · ",
        (highlight.id, "id"),
        ("*" if highlight.pending else "", "warn"),
    )
    if ui.out_tty:
        title.truncate(max(8, ui.width - 2 - rest.cell_len), overflow="ellipsis")
    return Text("  ") + title + rest


def size(count: int) -> str:
    """A byte count as the progress bars show it (decimal units: ``1.8 MB``)."""
    return filesize.decimal(count)


# What starts each bookmark in an export file, per format (CSV: each CRLF-ended row after the header;
# Markdown: a bookmark's heading; Web Annotations: each highlight, the records of that format).
_RECORD_MARK = {"json": b'"clientBookmarkId":', "netscape": b"<DT><A ", "csv": b"\r\n", "markdown": b"\n## ",
                "annotations": b'"type":"Annotation"'}  # fmt: skip
_HEADER_RECORDS = {"csv": 1}


class ExportCounter:
    """Counts the bookmarks in an export stream as its chunks go by (a mark split across chunks counts once).

    An estimate for a progress bar: a CSV field holding a CRLF, or a bookmark filed in two folders of a
    Netscape file, counts twice."""

    def __init__(self, fmt: str) -> None:
        self._mark = _RECORD_MARK[fmt]
        self._skip = _HEADER_RECORDS.get(fmt, 0)
        self._seen = 0
        self._tail = b""

    def feed(self, chunk: bytes) -> int:
        data = self._tail + chunk
        self._seen += data.count(self._mark)
        # Too short to hold a whole mark (none of the marks can overlap itself): nothing is counted twice.
        self._tail = data[-(len(self._mark) - 1) :]
        return self.count

    @property
    def count(self) -> int:
        return max(0, self._seen - self._skip)
