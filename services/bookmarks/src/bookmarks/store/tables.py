"""Tables of the bookmarks database."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, Boolean, Column, DateTime, Index, Integer, Table, Text, func, literal, text
from sqlalchemy.dialects.postgresql import JSONB, REGCONFIG, TSVECTOR, UUID
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import UserDefinedType
from sqlmodel import Field, SQLModel

from bookmarks.domain.model import BOOKMARK_FIELDS
from bookmarks.store.columns import column

# A column's ``info`` for STORAGE EXTERNAL (out of line, never compressed), which SQLAlchemy cannot declare:
# the migration sets it, and the migrations' test holds the installed storage to the columns marked so.
UNCOMPRESSED: dict[str, Any] = {"storage": "external"}


def _ts(nullable: bool = True) -> Any:
    return Column(DateTime(timezone=True), nullable=nullable)


# One bookmark of one user; a soft-deleted row is a tombstone whose position is its deletion time. Its own
# columns follow the record's declaration (store/columns.py); the search index, the stored wire document
# and the indexes are the table's own.
bookmarks = Table(
    "bookmarks",
    SQLModel.metadata,
    *(column(declared) for declared in BOOKMARK_FIELDS),
    # Search index (bookmarks.search.sql): written by the same statement as the fields above. Never read
    # back into the domain object (BOOKMARK_COLUMNS leaves them out).
    # The two large vectors are kept out of line uncompressed (STORAGE EXTERNAL, migration 0020): a row
    # test reads the whole vector, and decompressing it cost more than reading it.
    Column("search_vector", TSVECTOR, nullable=False, server_default=text("''"), info=UNCOMPRESSED),
    Column("search_head", TSVECTOR, nullable=False, server_default=text("''")),
    Column("search_config", REGCONFIG, nullable=False, server_default=text("'simple'::regconfig")),
    Column("search_tags", ARRAY(Text), nullable=False, server_default=text("'{}'")),
    Column("search_page_text", Text),
    Column("search_page_vector", TSVECTOR, nullable=False, server_default=text("''"), info=UNCOMPRESSED),
    # The live highlights' quotes and notes (bookmarks.highlights.search): the texts, for snippets, and
    # their part of search_vector, kept so a PUT can rebuild search_vector.
    Column("search_highlight_texts", ARRAY(Text), nullable=False, server_default=text("'{}'")),
    Column("search_highlight_vector", TSVECTOR, nullable=False, server_default=text("''")),
    # The record's wire document (api/wire.py) without saveWhy and the closing brace, which each delta page
    # appends for the reader's plan: rendered on every insert and update by the trigger of migration 0006,
    # so a page only joins stored text. Never written by the code, never read back into the record.
    Column("wire_document", Text, nullable=False),
    # The delta stream's keyset: WHERE owner = ? AND (updated_at, id) > (?, ?) ORDER BY updated_at, id.
    Index("ix_bookmarks_stream", "owner_uid", "updated_at", "client_bookmark_id", unique=True),
    # Lookup by URL (migration 0007): an owner's live rows of one normalized URL, newest first.
    Index(
        "ix_bookmarks_live_url",
        "owner_uid",
        "normalized_url",
        text("updated_at DESC"),
        postgresql_where=text("deleted_at IS NULL"),
    ),
    # Search (bookmarks.search.sql, migration 0004): exact GIN lookups, and newest-first keyset walks.
    Index("ix_bookmarks_search", "search_vector", postgresql_using="gin"),
    Index("ix_bookmarks_search_head", "search_head", postgresql_using="gin"),
    Index("ix_bookmarks_search_tags", "search_tags", postgresql_using="gin"),
    # The trash (bookmarks.trash, migration 0008): a user's deleted rows that still hold their state,
    # newest deletion first; and every user's, oldest first, for the retention purge.
    Index(
        "ix_bookmarks_trash",
        "owner_uid",
        text("deleted_at DESC"),
        text("client_bookmark_id DESC"),
        postgresql_where=text("deleted_at IS NOT NULL AND url <> ''"),
    ),
    Index("ix_bookmarks_trash_expiry", "deleted_at", postgresql_where=text("deleted_at IS NOT NULL AND url <> ''")),
    Index(
        "ix_bookmarks_search_newest",
        "owner_uid",
        func.coalesce(text("client_saved_at"), text("created_at")).desc(),
        text("client_bookmark_id DESC"),
        postgresql_where=text("deleted_at IS NULL"),
    ),
)

# The duplicates key (docs/api-guide.md, section 14), written here only: the page's canonical URL, else the
# normalized URL. Bookmarks with one key are duplicates; as a canonical URL is itself normalized, a copy
# naming X as its canonical meets the bookmark saved as X. Listing, merge and lookup read it through
# ix_bookmarks_live_duplicate_key (migration 0015): an owner's live rows of one key, newest first.
DUPLICATE_KEY = func.coalesce(bookmarks.c.canonical_url, bookmarks.c.normalized_url)
Index(
    "ix_bookmarks_live_duplicate_key",
    bookmarks.c.owner_uid,
    DUPLICATE_KEY,
    bookmarks.c.updated_at.desc(),
    postgresql_where=bookmarks.c.deleted_at.is_(None),
)


class _Weights(UserDefinedType[str]):
    """PostgreSQL's ``"char"[]`` of tsvector weights, always rendered as a literal (``'{a,b}'``): an index
    expression and a query's condition must hold the same constant for the planner to match them."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return '"char"[]'

    def literal_processor(self, dialect: Dialect) -> Callable[[Any], str]:
        return lambda value: "'" + value.replace("'", "''") + "'"


def ab_lexemes(vector: ColumnElement[Any]) -> ColumnElement[Any]:
    """``ts_filter(vector, '{a,b}')``: the lexemes of ``vector`` at weight A or B with those positions only
    (positionless lexemes, the stems, are left out). IMMUTABLE, so an index expression."""
    return func.ts_filter(vector, literal("{a,b}", _Weights(), literal_execute=True), type_=TSVECTOR)


# Search's middle tier (bookmarks.search.sql, migration 0019): every word as written in the fields at weight A
# or B is a plain GIN read of the A and B lexemes of search_vector, without the page text's and notes' rows
# holding the words (ix_bookmarks_search keeps no weights: a ``:AB`` tsquery rechecks every such row).
SEARCH_AB_INDEX = Index("ix_bookmarks_search_ab", ab_lexemes(bookmarks.c.search_vector), postgresql_using="gin")

# Search's domain: filter (bookmarks.search.sql) reads ix_bookmarks_live_domain, made by migration 0018 and
# not declared here (autogenerate cannot compare an index expression with a COLLATE; bookmarks.migrate lists
# it): an owner's live rows by reversed domain in byte order, ON bookmarks (owner_uid, (reverse(domain)
# COLLATE "C")) WHERE deleted_at IS NULL, so a host and its subdomains (``moc.elpmaxe``, and everything from
# ``moc.elpmaxe.`` up to ``moc.elpmaxe/``) are two ranges of it.


class CollectionRow(SQLModel, table=True):
    """One collection (folder) of one user; same stream-position semantics as a bookmark row."""

    __tablename__ = "collections"
    __table_args__ = (Index("ix_collections_stream", "owner_uid", "updated_at", "collection_id", unique=True),)

    owner_uid: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    collection_id: str = Field(sa_column=Column(Text, primary_key=True))
    name: str = Field(sa_column=Column(Text, nullable=False))
    parent_id: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime = Field(sa_column=_ts(nullable=False))
    updated_at: datetime = Field(sa_column=_ts(nullable=False))
    deleted_at: datetime | None = Field(default=None, sa_column=_ts())


class HighlightRow(SQLModel, table=True):
    """One highlight of one user (bookmarks.highlights); same stream-position semantics as a bookmark row.
    ``quote_start``/``quote_end`` are the wire's ``start``/``end``."""

    __tablename__ = "highlights"
    __table_args__ = (
        Index("ix_highlights_stream", "owner_uid", "updated_at", "highlight_id", unique=True),
        # A bookmark's highlights (limits, re-anchoring, delete and restore with the bookmark, merges).
        Index("ix_highlights_bookmark", "owner_uid", "client_bookmark_id"),
    )

    owner_uid: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    highlight_id: str = Field(sa_column=Column(Text, primary_key=True))
    client_bookmark_id: str = Field(sa_column=Column(Text, nullable=False))
    quote: str = Field(sa_column=Column(Text, nullable=False))
    prefix: str = Field(sa_column=Column(Text, nullable=False))
    suffix: str = Field(sa_column=Column(Text, nullable=False))
    quote_start: int | None = Field(default=None, sa_column=Column(Integer))
    quote_end: int | None = Field(default=None, sa_column=Column(Integer))
    color: str = Field(sa_column=Column(Text, nullable=False))
    note: str = Field(sa_column=Column(Text, nullable=False))
    anchor: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime = Field(sa_column=_ts(nullable=False))
    updated_at: datetime = Field(sa_column=_ts(nullable=False))
    deleted_at: datetime | None = Field(default=None, sa_column=_ts())
    with_bookmark: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))


class PageTextRow(SQLModel, table=True):
    """A bookmark's readable text as enrichment extracted it last (up to ``PAGE_TEXT_MAX_BYTES``): what its
    highlights are anchored in (bookmarks.highlights). Search indexes the start of it (``search_page_text``)."""

    __tablename__ = "page_texts"

    owner_uid: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    client_bookmark_id: str = Field(sa_column=Column(Text, primary_key=True))
    text: str = Field(sa_column=Column(Text, nullable=False))


class UserStreamRow(SQLModel, table=True):
    """Per-user stream head. Locking it serializes one user's writes so positions follow commit order."""

    __tablename__ = "user_streams"

    owner_uid: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    last_position: datetime = Field(sa_column=_ts(nullable=False))
    is_pro: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))
    # Every text-search configuration (page language) of the user's rows, 'simple' left out: search looks
    # a word's stems up in these only (bookmarks.search.queries). Grows, never shrinks (migration 0005).
    search_configs: list[str] = Field(
        default_factory=list, sa_column=Column(ARRAY(Text), nullable=False, server_default=text("'{}'"))
    )


class BulkOperationRow(SQLModel, table=True):
    """A bulk change that may still be undone (bookmarks.bulk): what it set, field by field, until
    ``expires_at``. Found by the SHA-256 of its undo token; the token itself is never stored."""

    __tablename__ = "bulk_operations"
    __table_args__ = (Index("ix_bulk_operations_expires", "expires_at"),)

    token_hash: str = Field(sa_column=Column(Text, primary_key=True))
    owner_uid: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), nullable=False))
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.now()))
    expires_at: datetime = Field(sa_column=_ts(nullable=False))
    changes: list[dict[str, Any]] = Field(sa_column=Column(JSONB, nullable=False))
    undone_at: datetime | None = Field(default=None, sa_column=_ts())


class MergeRow(SQLModel, table=True):
    """A bookmark a duplicates merge deleted, and the one kept instead (the trash's ``mergedInto``).
    It speaks for the tombstone whose ``deleted_at`` it holds; a later delete of the same id is not it."""

    __tablename__ = "merges"

    owner_uid: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    client_bookmark_id: str = Field(sa_column=Column(Text, primary_key=True))
    merged_into: str = Field(sa_column=Column(Text, nullable=False))
    deleted_at: datetime = Field(sa_column=_ts(nullable=False))


class DeletedUserRow(SQLModel, table=True):
    """Users deleted or merged away: their late writes are refused rather than resurrecting data."""

    __tablename__ = "deleted_users"

    owner_uid: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    deleted_at: datetime = Field(sa_column=_ts(nullable=False))


class PendingEnrichmentRow(SQLModel, table=True):
    """An enrichment result that arrived before its bookmark (docs/api-guide.md, section 6); applied on create."""

    __tablename__ = "pending_enrichments"

    owner_uid: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    client_bookmark_id: str = Field(sa_column=Column(Text, primary_key=True))
    normalized_url: str = Field(sa_column=Column(Text, nullable=False))
    event: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    received_at: datetime = Field(
        sa_column=Column(DateTime(timezone=True), nullable=False, server_default=text("now()"))
    )


SEARCH_COLUMN_PREFIX = "search_"
WIRE_DOCUMENT_COLUMN = "wire_document"
# The bookmark's own columns: what reads select (the search index and the wire document stay in the database).
BOOKMARK_COLUMNS = tuple(
    c for c in bookmarks.columns if not c.name.startswith(SEARCH_COLUMN_PREFIX) and c.name != WIRE_DOCUMENT_COLUMN
)
collections = CollectionRow.__table__  # type: ignore[attr-defined]
highlights = HighlightRow.__table__  # type: ignore[attr-defined]
page_texts = PageTextRow.__table__  # type: ignore[attr-defined]
bulk_operations = BulkOperationRow.__table__  # type: ignore[attr-defined]
merges = MergeRow.__table__  # type: ignore[attr-defined]
user_streams = UserStreamRow.__table__  # type: ignore[attr-defined]
deleted_users = DeletedUserRow.__table__  # type: ignore[attr-defined]
pending_enrichments = PendingEnrichmentRow.__table__  # type: ignore[attr-defined]
