"""This service's own JSON export (docs/api-guide.md, section 13), read back for import.

Shape (version 1; the Bookmark fields are those of the API's Bookmark resource)::

    {"version": 1, "exportedAt": "...",
     "collections": [{"id", "name", "parentId", "createdAt", "updatedAt"}, ...],
     "bookmarks": [{"clientBookmarkId", "url", "title", "description", "notes", "isFavorite",
                    "isArchived", "userTags", "collectionIds", "clientSavedAt", "lastOpenedAt",
                    "thumbnailUrl", ...server enrichment fields...,
                    "highlights": [{"quote", "prefix", "suffix", "start", "end", "color", "note",
                                    ...}, ...]}, ...]}

``highlights`` is optional (exports made before highlights existed have none).

The export writes ``collections`` before ``bookmarks``, so one pass turns ``collectionIds`` into name
paths while streaming; a file that has them the other way round is read twice (collections first).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Final

from bookmarks.domain.model import CLIENT_BOOKMARK_ID_RE
from bookmarks.imports.formats.jsonstream import JsonStream
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
    invalid,
    parse_iso,
    web_url,
    with_highlights,
)
from bookmarks.imports.formats.text import decode_stream

__all__ = ["EXPORT_VERSION", "ImportCollection", "json_collections", "parse_json"]

EXPORT_VERSION: Final = 1
MAX_COLLECTIONS: Final = 10_000
_TEXT_FIELDS: Final = (("title", MAX_TITLE), ("description", MAX_DESCRIPTION), ("notes", MAX_NOTES))


@dataclass(frozen=True, slots=True)
class ImportCollection:
    """A collection of the export: its id there and its name path (root first, at most 10 levels)."""

    id: str
    path: tuple[str, ...]


def json_collections(fp: BinaryIO) -> tuple[ImportCollection, ...]:
    """Every collection of the export (empty ones too), for the importer to create before the items."""
    reader = _Reader(fp)
    reader.read_collections_only()
    return tuple(ImportCollection(id=cid, path=path) for cid, path in reader.paths.items())


def parse_json(fp: BinaryIO) -> Iterator[ImportItem]:
    return _Reader(fp).items()


class _Reader:
    def __init__(self, fp: BinaryIO) -> None:
        self._fp = fp
        self._stream = JsonStream(decode_stream(fp))
        self.paths: dict[str, tuple[str, ...]] = {}
        self._collections_seen = False
        self._version_seen = False

    def read_collections_only(self) -> None:
        for key in self._keys():
            if key == "collections":
                self._read_collections()
                return
            self._skip()

    def items(self) -> Iterator[ImportItem]:
        for key in self._keys():
            if key == "collections" and not self._collections_seen:
                self._read_collections()
            elif key == "bookmarks":
                if not self._collections_seen:
                    self._look_ahead_for_collections()
                for line, element in self._stream.iter_array():
                    yield self._item(line, element)
            else:
                self._skip()

    def _look_ahead_for_collections(self) -> None:
        """Bookmarks before collections (not how the export writes it): read the collections first."""
        resume_at = self._fp.tell()
        self._fp.seek(0)
        ahead = _Reader(self._fp)
        ahead.read_collections_only()
        self._fp.seek(resume_at)
        self.paths, self._collections_seen = ahead.paths, True

    def _skip(self) -> None:
        """Consume a value; an array element by element, so a big unknown array is no problem."""
        if self._stream.peek() == "[":
            for _ in self._stream.iter_array():
                pass
        else:
            self._stream.value()

    def _keys(self) -> Iterator[str]:
        if self._stream.peek() != "{":
            raise ImportFormatError("This JSON file is not an export of this service (expected an object).")
        for key in self._stream.iter_keys():
            if key == "version":
                self._check_version(self._stream.value())
                continue
            if key in ("collections", "bookmarks") and not self._version_seen:
                raise ImportFormatError(f'The JSON export has no "version" before its {key}.')
            yield key

    def _check_version(self, version: object) -> None:
        if version != EXPORT_VERSION or isinstance(version, bool):
            raise ImportFormatError(
                f"Unsupported export version {str(version)[:20]!r}; this service reads version {EXPORT_VERSION}."
            )
        self._version_seen = True

    def _read_collections(self) -> None:
        raw: dict[str, tuple[str, str | None]] = {}
        for line, element in self._stream.iter_array():
            if len(raw) >= MAX_COLLECTIONS:
                raise ImportFormatError(f"The export has more than {MAX_COLLECTIONS:,} collections.")
            if (
                not isinstance(element, dict)
                or not isinstance(element.get("id"), str)
                or not isinstance(element.get("name"), str)
            ):
                raise ImportFormatError(f"Line {line}: a collection needs a string id and name.")
            parent = element.get("parentId")
            raw[element["id"]] = (element["name"], parent if isinstance(parent, str) else None)
        self.paths = {cid: _path(cid, raw) for cid in raw}
        self._collections_seen = True

    def _item(self, line: int, element: object) -> ImportItem:
        if not isinstance(element, dict):
            return invalid(line, "", "The bookmark is not a JSON object.")
        url = element.get("url")
        if not isinstance(url, str):
            return invalid(line, "", "The bookmark has no URL.")
        problem = _type_problem(element) or _highlights_problem(element.get("highlights"))
        if problem is not None:
            return invalid(line, url, problem)
        item = self._valid_item(line, url, element)
        return with_highlights(item, _highlights(element.get("highlights")))

    def _valid_item(self, line: int, url: str, element: dict[str, object]) -> ImportItem:
        warnings: list[str] = []
        texts = {name: clean_text(_str(element.get(name)), limit, name, warnings) for name, limit in _TEXT_FIELDS}
        ids = list(_strings(element.get("collectionIds")))
        unknown = [cid for cid in ids if cid not in self.paths]
        if unknown:
            warnings.append(f"collection id(s) {', '.join(unknown[:5])} not in the export; not filed there")
        return ImportItem(
            line=line,
            url=url.strip(),
            title=texts["title"],
            description=texts["description"],
            notes=texts["notes"],
            user_tags=clean_tags(_strings(element.get("userTags")), warnings),
            collection_paths=tuple(dict.fromkeys(self.paths[cid] for cid in ids if cid in self.paths)),
            is_favorite=_bool(element.get("isFavorite")),
            is_archived=_bool(element.get("isArchived")),
            saved_at=parse_iso(element.get("clientSavedAt")),
            last_opened_at=parse_iso(element.get("lastOpenedAt")),
            thumbnail_url=web_url(element.get("thumbnailUrl")),
            client_bookmark_id=_client_id(element.get("clientBookmarkId"), warnings),
            warnings=tuple(warnings),
        )


def _type_problem(element: dict[str, object]) -> str | None:
    for name in ("title", "description", "notes", "thumbnailUrl", "clientBookmarkId", "clientSavedAt", "lastOpenedAt"):
        if element.get(name) is not None and not isinstance(element.get(name), str):
            return f"{name} must be a string or null."
    for name in ("isFavorite", "isArchived"):
        if element.get(name) is not None and not isinstance(element.get(name), bool):
            return f"{name} must be true or false."
    for name in ("userTags", "collectionIds"):
        value = element.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f"{name} must be a list of strings."
    return None


_HIGHLIGHT_TEXTS: Final = ("quote", "prefix", "suffix", "color", "note", "createdAt")


def _highlights_problem(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(h, dict) for h in value):
        return "highlights must be a list of objects."
    for number, h in enumerate(value, start=1):
        if not isinstance(h.get("quote"), str):
            return f"Highlight {number}: quote must be a string."
        if any(h.get(name) is not None and not isinstance(h.get(name), str) for name in _HIGHLIGHT_TEXTS):
            return f"Highlight {number}: {', '.join(_HIGHLIGHT_TEXTS[1:])} must be strings or null."
        for name in ("start", "end"):
            offset = h.get(name)
            if offset is not None and (not isinstance(offset, int) or isinstance(offset, bool)):
                return f"Highlight {number}: {name} must be an integer or null."
    return None


def _highlights(value: object) -> list[ImportHighlight]:
    """The API's Highlight resources (checked by :func:`_highlights_problem`); id, bookmarkId, anchor and
    the timestamps are the exporting account's and are not kept."""
    if not isinstance(value, list):
        return []
    return [
        ImportHighlight(
            quote=h["quote"],
            note=h.get("note") or "",
            prefix=h.get("prefix") or "",
            suffix=h.get("suffix") or "",
            start=h.get("start"),
            end=h.get("end"),
            color=h.get("color") or "yellow",
        )
        for h in value
    ]


def _path(cid: str, raw: dict[str, tuple[str, str | None]]) -> tuple[str, ...]:
    """Name path root-first; a parent cycle or a missing parent ends the walk (the path starts there)."""
    names: list[str] = []
    seen: set[str] = set()
    current: str | None = cid
    while current is not None and current in raw and current not in seen:
        seen.add(current)
        name, current = raw[current]
        names.append(name)
    return clean_path(names[::-1], [])


def _client_id(value: object, warnings: list[str]) -> str | None:
    if value is None or (isinstance(value, str) and CLIENT_BOOKMARK_ID_RE.fullmatch(value)):
        return value
    warnings.append("clientBookmarkId is not a valid id; not kept")
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _bool(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
