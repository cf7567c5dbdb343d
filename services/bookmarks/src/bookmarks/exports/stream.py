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
from bookmarks.exports.folders import FolderTree
from bookmarks.exports.formats import ExportWriter, JsonWriter, writer_for
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
    writer: ExportWriter | JsonWriter
    exported_at: datetime
    batch_rows: int = BATCH_ROWS

    @property
    def filename(self) -> str:
        return f"bookmarks-{self.exported_at:%Y-%m-%d}.{self.writer.extension}"

    async def body(self) -> AsyncIterator[bytes]:
        """The file: head, one chunk per batch of rows, tail. The snapshot ends with the stream."""
        try:
            yield self.writer.head().encode()
            parts = self._documents(self.writer) if isinstance(self.writer, JsonWriter) else self._records(self.writer)
            async for chunk in parts:
                if chunk:
                    yield chunk.encode()
            yield self.writer.tail().encode()
        finally:
            await self.session.close()

    async def _records(self, writer: ExportWriter) -> AsyncIterator[str]:
        folder_ids = self.tree.ids() if writer.by_folder else None
        batches = export_queries.bookmark_batches(
            self.session, self.owner, folder_ids, self.batch_rows, annotated_only=writer.annotated_only
        )
        async for batch in batches:
            if not writer.highlights:
                yield writer.batch(batch)
                continue
            async for items in export_queries.with_highlights(self.session, self.owner, batch, self.batch_rows):
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
