"""An export as a stream of bytes: one read-only REPEATABLE READ snapshot, rows in batches.

``open_export`` does everything that can fail cleanly (the database is reachable, the snapshot is taken,
the collection tree is read) before the response starts, so those failures are ordinary error answers;
``Export.body()`` then writes the file batch by batch and always ends the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.api import wire
from bookmarks.exports import queries as export_queries
from bookmarks.exports.annotated import AnnotationsWriter, MarkdownWriter
from bookmarks.exports.folders import FolderTree
from bookmarks.exports.formats import ExportWriter, JsonWriter, RecordWriter, writer_for
from bookmarks.store import lookups
from bookmarks.store.tables import bookmarks, highlights
from common.db import SessionFactory

BATCH_ROWS: Final = 1000
_SNAPSHOT: Final = {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}


@dataclass
class Export:
    session: AsyncSession
    owner: uuid.UUID
    tree: FolderTree
    writer: ExportWriter
    exported_at: datetime
    batch_rows: int = BATCH_ROWS

    @property
    def filename(self) -> str:
        return f"bookmarks-{self.exported_at:%Y-%m-%d}.{self.writer.extension}"

    async def body(self) -> AsyncIterator[bytes]:
        """The file: head, one chunk per batch of rows, tail. The snapshot ends with the stream."""
        try:
            yield self.writer.head().encode()
            async for chunk in self._parts():
                if chunk:
                    yield chunk.encode()
            yield self.writer.tail().encode()
        finally:
            await self.session.close()

    def _parts(self) -> AsyncIterator[str]:
        writer = self.writer
        if isinstance(writer, JsonWriter):
            return self._documents(writer)
        if isinstance(writer, MarkdownWriter | AnnotationsWriter):
            return self._annotated(writer)
        return self._records(writer)

    async def _records(self, writer: RecordWriter) -> AsyncIterator[str]:
        folder_ids = self.tree.ids() if writer.by_folder else None
        async for batch in export_queries.bookmark_batches(self.session, self.owner, folder_ids, self.batch_rows):
            yield writer.batch(batch)

    async def _annotated(self, writer: MarkdownWriter | AnnotationsWriter) -> AsyncIterator[str]:
        session, owner, rows = self.session, self.owner, self.batch_rows
        async for batch in export_queries.annotatable_batches(session, owner, rows):
            async for items in export_queries.with_highlights(session, owner, batch, rows):
                yield writer.annotated(items)

    async def _documents(self, writer: JsonWriter) -> AsyncIterator[str]:
        """Each bookmark and highlight as the wire plans render them in SQL
        (docs/decisions/0157-json-export-from-rendered-documents.md)."""
        bookmark, highlight = wire.sql_portable_bookmark(bookmarks, writer.is_pro), wire.sql_highlight(highlights)
        session, owner, rows = self.session, self.owner, self.batch_rows
        async for batch in export_queries.document_batches(session, owner, rows, bookmark):
            async for items in export_queries.with_highlight_documents(session, owner, batch, rows, highlight):
                yield writer.documents(items)


async def open_export(sessions: SessionFactory, owner: uuid.UUID, fmt: str, *, batch_rows: int = BATCH_ROWS) -> Export:
    session = sessions()
    try:
        await session.connection(execution_options=_SNAPSHOT)
        tree = FolderTree.of(await export_queries.live_collections(session, owner))
        is_pro = await lookups.is_pro(session, owner)
    except BaseException:
        await session.close()
        raise
    exported_at = datetime.now(UTC)
    writer = writer_for(fmt, tree, is_pro=is_pro, exported_at=exported_at)
    return Export(session, owner, tree, writer, exported_at, batch_rows)
