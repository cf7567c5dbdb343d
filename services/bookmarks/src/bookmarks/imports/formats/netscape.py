"""The Netscape bookmark file (every browser, Pinboard, linkding, Shiori, Raindrop, Karakeep).

Fed to ``html.parser`` chunk by chunk. Every ``<H3>`` opens a folder for the ``<DL>`` that follows it
(the browsers' own "Bookmarks bar"/"Bookmarks Toolbar"/"Other Bookmarks" included); ``<H1>`` is the
file's root and not a folder. ``<DD>`` after a bookmark is its description. Pocket's older HTML export
(``<h1>Unread</h1><ul><li><a href time_added tags>`` and ``<h1>Read Archive</h1>``) is read too, its
archived state included.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import BinaryIO, Final

from bookmarks.imports.formats.model import (
    MAX_COLLECTION_DEPTH,
    MAX_DESCRIPTION,
    MAX_TITLE,
    ImportFormatError,
    ImportItem,
    clean_path,
    clean_tags,
    clean_text,
    from_unix,
    invalid,
)
from bookmarks.imports.formats.text import decode_stream

__all__ = ["parse_netscape"]

MAX_PENDING_CHARS: Final = 1024 * 1024  # an unterminated tag or comment may not grow past this
_MAX_TEXT: Final = MAX_DESCRIPTION + 1  # captured text beyond this is dropped (and then cut, with a warning)
_MAX_KEPT_LEVELS: Final = MAX_COLLECTION_DEPTH + 2  # deeper levels are only counted
_POCKET_SECTIONS: Final = {"unread": False, "read archive": True}
_ENDS_DESCRIPTION: Final = frozenset({"dt", "dl", "h3", "h1", "hr", "a"})


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: deque[ImportItem] = deque()
        self._levels: list[str | None] = []  # one per open <DL>: its folder name, None for the root
        self._deeper = 0  # open <DL>s beyond _MAX_KEPT_LEVELS
        self._heading: str | None = None  # an <H3> waiting for its <DL>
        self._capture: str | None = None  # "a", "h1", "h3" or "dd"
        self._archived: bool | None = None  # Pocket's old HTML export: <h1>Unread</h1> / <h1>Read Archive</h1>
        self._text: list[str] = []
        self._text_len = 0
        self._bookmark: dict[str, str | None] | None = None
        self._bookmark_line = 0
        self._title: str | None = None
        self.recognised = False  # a <DL> or an <A> was seen

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _ENDS_DESCRIPTION:
            self._finish_bookmark()
        if tag == "a":
            self.recognised = True
            self._bookmark = dict(attrs)
            self._bookmark_line = self.getpos()[0]
            self._heading = None  # an <H3> followed by a bookmark instead of a <DL> was an empty folder
            self._start_capture("a")
        elif tag in ("h1", "h3"):
            self._start_capture(tag)
        elif tag == "dd" and self._bookmark is not None and self._capture is None:
            self._start_capture("dd")
        elif tag == "dl":
            self.recognised = True
            self._open_level()

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._capture == "a":
            self._title = self._end_capture()
        elif tag == "h3" and self._capture == "h3":
            self._heading = " ".join(self._end_capture().split())
        elif tag == "h1" and self._capture == "h1":
            self._archived = _POCKET_SECTIONS.get(self._end_capture().strip().lower())
        elif tag == "dl":
            self._finish_bookmark()
            self._close_level()

    def handle_data(self, data: str) -> None:
        if self._capture is not None and self._text_len < _MAX_TEXT:
            self._text.append(data)
            self._text_len += len(data)

    def close(self) -> None:
        super().close()
        self._finish_bookmark()

    def _start_capture(self, kind: str) -> None:
        self._capture, self._text, self._text_len = kind, [], 0

    def _end_capture(self) -> str:
        self._capture = None
        return "".join(self._text)

    def _open_level(self) -> None:
        if len(self._levels) < _MAX_KEPT_LEVELS:
            self._levels.append(self._heading)
        else:
            self._deeper += 1
        self._heading = None

    def _close_level(self) -> None:
        if self._deeper:
            self._deeper -= 1
        elif self._levels:
            self._levels.pop()
        self._heading = None

    def _finish_bookmark(self) -> None:
        if self._bookmark is None:
            return
        attrs, line = self._bookmark, self._bookmark_line
        title = self._title if self._capture != "a" else self._end_capture()  # an <A> never closed
        description = self._end_capture() if self._capture == "dd" else None
        self._bookmark, self._title, self._capture = None, None, None
        self.out.append(self._item(attrs, line, title, description))

    def _item(self, attrs: dict[str, str | None], line: int, title: str | None, description: str | None) -> ImportItem:
        href = (attrs.get("href") or "").strip()
        if not href:
            return invalid(line, "", "The bookmark has no HREF.")
        warnings: list[str] = []
        names = [name for name in self._levels if name is not None]
        path = clean_path(names, warnings, extra_depth=self._deeper)
        return ImportItem(
            line=line,
            url=href,
            title=clean_text(" ".join(title.split()) if title else None, MAX_TITLE, "title", warnings),
            description=clean_text(description, MAX_DESCRIPTION, "description", warnings),
            user_tags=clean_tags((attrs.get("tags") or "").split(","), warnings),
            collection_paths=(path,) if path else (),
            is_archived=self._archived,
            saved_at=from_unix(attrs.get("add_date") or attrs.get("time_added")),
            warnings=tuple(warnings),
        )


def parse_netscape(fp: BinaryIO) -> Iterator[ImportItem]:
    parser = _Parser()
    for chunk in decode_stream(fp, html=True):
        parser.feed(chunk)
        yield from _drain(parser.out)
        if len(parser.rawdata) > MAX_PENDING_CHARS:
            raise ImportFormatError(
                f"Line {parser.getpos()[0]}: a tag or comment runs on for more than {MAX_PENDING_CHARS:,} "
                "characters; the file is damaged or not a bookmark file."
            )
    parser.close()
    yield from _drain(parser.out)
    if not parser.recognised:
        raise ImportFormatError("The file has no bookmarks (<DL> or <A>); it is not a Netscape bookmark file.")


def _drain(queue: deque[ImportItem]) -> Iterator[ImportItem]:
    while queue:
        yield queue.popleft()
