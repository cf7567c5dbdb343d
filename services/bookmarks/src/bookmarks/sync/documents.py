"""The delta page on the wire: each record's document rendered by PostgreSQL with the wire layer's plans
compiled to SQL (``api/wire.py``), and the envelope around the page's groups."""

from __future__ import annotations

from bookmarks.api import wire
from bookmarks.sync.queries import DeltaDocuments, DeltaSlice

DELTA_DOCUMENTS = DeltaDocuments(
    bookmark=wire.sql_bookmark,
    bookmark_tombstone=wire.sql_bookmark_tombstone,
    collection=wire.sql_collection,
    collection_tombstone=wire.sql_collection_tombstone,
    highlight=wire.sql_highlight,
    highlight_tombstone=wire.sql_highlight_tombstone,
)


def delta_body(cursor: str | None, next_cursor: str | None, page: DeltaSlice) -> bytes:
    """The delta envelope around the documents PostgreSQL rendered (each group comma-joined JSON)."""
    groups = (
        ("upserts", page.bookmarks),
        ("tombstones", page.bookmark_tombstones),
        ("collections", page.collections),
        ("collectionTombstones", page.collection_tombstones),
        ("highlights", page.highlights),
        ("highlightTombstones", page.highlight_tombstones),
    )
    parts = [b'{"data":{"cursor":', wire.dumps(cursor), b',"nextCursor":', wire.dumps(next_cursor)]
    for key, documents in groups:
        parts += [b',"', key.encode(), b'":[', documents, b"]"]
    parts.append(b"}}")
    return b"".join(parts)
