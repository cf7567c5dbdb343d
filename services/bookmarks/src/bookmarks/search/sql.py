"""The search index and query as SQLAlchemy Core expressions over any table with the search columns.

Index (maintained by the application in the statement that writes the bookmark; docs/decisions-made.md
"Search")::

    search_vector  tsvector   per field: setweight(to_tsvector('simple', f) || to_tsvector(cfg, f), w)
    search_config  regconfig  the page language's configuration, 'simple' when unknown
    search_tags    text[]     folded tags + userTags (for tag:)

Every text reaching PostgreSQL is folded in Python first (:func:`bookmarks.search.folding.fold`). Fields
are separated by :data:`GAP_WORD` runs, deleted afterwards, so a phrase never spans two fields.

Query: each required word or phrase ``t`` must match ``simple(t) || cfg(t)`` where ``cfg`` is the row's
own configuration. A constant prefilter (``t`` in every configuration) lets the GIN index find candidates.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSVECTOR
from sqlalchemy.sql.elements import ColumnElement

from bookmarks.search.cursor import SearchPosition
from bookmarks.search.folding import fold
from bookmarks.search.query import (
    CollectionFilter,
    Condition,
    DateFilter,
    DomainFilter,
    Flag,
    FlagFilter,
    Query,
    TagFilter,
)
from bookmarks.search.snippet import HEADLINE_OPTIONS, headline_document

SIMPLE: Final = "simple"
# ISO 639-1 → PostgreSQL 16's built-in snowball configurations.
LANGUAGE_CONFIGS: Final[Mapping[str, str]] = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
    "en": "english", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil",
    "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
ALL_CONFIGS: Final = (SIMPLE, *sorted(set(LANGUAGE_CONFIGS.values())))
# A number: every built-in configuration keeps digits as they are, so one ts_delete removes it everywhere.
GAP_WORD: Final = "90210902109021090210"
_GAP: Final = " " + " ".join([GAP_WORD] * 8) + " "
MAX_PAGE_TEXT_CHARS: Final = 32_000  # tsvector positions stop at 16,383; two configurations per text
PENDING_STATUSES: Final = ("pending", "processing", "retrying")
TITLE_TIER: Final = 1.0  # a row whose title and tags hold every word ranks above any row where they do not


def config_for_language(language: str | None) -> str:
    """``"fr"``, ``"fr-CA"``, ``"FR_fr"`` → ``"french"``; unknown or missing → ``"simple"``."""
    if not language:
        return SIMPLE
    return LANGUAGE_CONFIGS.get(language.replace("_", "-").split("-")[0].lower(), SIMPLE)


@dataclass(frozen=True, slots=True)
class SearchColumns:
    """The columns search reads, so the builder attaches to whichever table carries them."""

    owner: ColumnElement[uuid.UUID]
    client_bookmark_id: ColumnElement[str]
    deleted_at: ColumnElement[datetime]
    vector: ColumnElement[Any]
    config: ColumnElement[Any]
    tags: ColumnElement[list[str]]
    domain: ColumnElement[str]
    collection_ids: ColumnElement[list[str]]
    is_favorite: ColumnElement[bool]
    is_archived: ColumnElement[bool]
    last_opened_at: ColumnElement[datetime]
    enrichment_status: ColumnElement[str]
    sort_time: ColumnElement[datetime]

    @classmethod
    def of(cls, table: sa.Table) -> SearchColumns:
        """The proposed column names (``owner_uid``, ``search_vector``, ...) of ``table``."""
        c = table.c
        return cls(
            owner=c.owner_uid,
            client_bookmark_id=c.client_bookmark_id,
            deleted_at=c.deleted_at,
            vector=c.search_vector,
            config=c.search_config,
            tags=c.search_tags,
            domain=c.domain,
            collection_ids=c.collection_ids,
            is_favorite=c.is_favorite,
            is_archived=c.is_archived,
            last_opened_at=c.last_opened_at,
            enrichment_status=c.enrichment_status,
            sort_time=sa.func.coalesce(c.client_saved_at, c.created_at),
        )


# --- the index -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """What one bookmark contributes to the index, original spelling (folded here)."""

    title: str | None = None
    tags: Sequence[str] = ()
    user_tags: Sequence[str] = ()
    description: str | None = None
    url: str | None = None
    domain: str | None = None
    save_why: str | None = None
    notes: str | None = None
    summary: str | None = None
    page_text: str | None = None
    language: str | None = None

    def weighted_texts(self) -> list[tuple[str, str]]:
        """(weight, folded text) with fields separated by :data:`_GAP`; empty weights left out."""
        page = (self.page_text or "")[:MAX_PAGE_TEXT_CHARS]
        groups = (
            ("A", [self.title, *self.tags, *self.user_tags]),
            ("B", [self.description, self.url, self.domain, self.save_why]),
            ("C", [self.notes, self.summary, page]),
        )
        weighted = []
        for weight, fields in groups:
            texts = [fold(f) for f in fields if f and f.strip()]
            if texts:
                weighted.append((weight, _GAP.join(texts)))
        return weighted


def search_tags(tags: Iterable[str], user_tags: Iterable[str]) -> list[str]:
    """The ``search_tags`` column: every tag folded, whitespace collapsed, duplicates removed, sorted."""
    return sorted({" ".join(fold(t).split()) for t in (*tags, *user_tags)} - {""})


class _Char(sa.types.UserDefinedType[str]):
    """PostgreSQL's one-byte ``"char"`` (tsvector weights), reached by an explicit cast from text."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return '"char"'


class _CharArray(sa.types.UserDefinedType[list[str]]):
    """``"char"[]`` (``ts_filter``'s weights)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return '"char"[]'


def _regconfig(name: str) -> ColumnElement[Any]:
    return sa.cast(sa.literal(name), REGCONFIG)


def _concat(vectors: Sequence[ColumnElement[Any]]) -> ColumnElement[Any]:
    gap = sa.func.to_tsvector(_regconfig(SIMPLE), sa.literal(_GAP))
    result = vectors[0]
    for vector in vectors[1:]:
        result = sa.func.tsvector_concat(sa.func.tsvector_concat(result, gap), vector)
    return sa.func.ts_delete(result, sa.literal(GAP_WORD))


def search_vector(document: SearchDocument) -> ColumnElement[Any]:
    """The ``search_vector`` value for ``document`` (a SQL expression over bound, folded text)."""
    config = config_for_language(document.language)
    configs = [SIMPLE] if config == SIMPLE else [SIMPLE, config]
    vectors = [
        sa.func.setweight(sa.func.to_tsvector(_regconfig(name), sa.literal(text)), sa.cast(sa.literal(weight), _Char()))
        for weight, text in document.weighted_texts()
        for name in configs
    ]
    if not vectors:
        return sa.cast(sa.literal(""), TSVECTOR)
    return _concat(vectors)


# --- the query -------------------------------------------------------------------------------------


def _tsquery_or(queries: Sequence[ColumnElement[Any]]) -> ColumnElement[Any]:
    result = queries[0]
    for query in queries[1:]:
        result = sa.func.tsquery_or(result, query)
    return result


def _tsquery_and(queries: Sequence[ColumnElement[Any]]) -> ColumnElement[Any]:
    result = queries[0]
    for query in queries[1:]:
        result = sa.func.tsquery_and(result, query)
    return result


def _term(config: ColumnElement[Any], text: str) -> ColumnElement[Any]:
    return sa.func.phraseto_tsquery(config, sa.literal(text))


def _config_term(config: str, text: str) -> ColumnElement[Any]:
    """``text`` as exact tokens or as stems in ``config``."""
    if config == SIMPLE:
        return _term(_regconfig(SIMPLE), text)
    return sa.func.tsquery_or(_term(_regconfig(SIMPLE), text), _term(_regconfig(config), text))


def _once(expression: ColumnElement[Any]) -> ColumnElement[Any]:
    """A scalar subquery: PostgreSQL computes it once per statement (an InitPlan), not once per row."""
    return sa.select(expression).scalar_subquery()


def _per_row_config(columns: SearchColumns, build: Callable[[str], ColumnElement[Any]]) -> ColumnElement[Any]:
    """``build(config)`` for the row's own configuration, each computed once per statement."""
    whens = [(columns.config == _regconfig(name), _once(build(name))) for name in ALL_CONFIGS if name != SIMPLE]
    return sa.case(*whens, else_=_once(build(SIMPLE)))


def _all_of(terms: Sequence[str]) -> Callable[[str], ColumnElement[Any]]:
    return lambda config: _tsquery_and([_config_term(config, t) for t in terms])


def _any_of(terms: Sequence[str]) -> Callable[[str], ColumnElement[Any]]:
    return lambda config: _tsquery_or([_config_term(config, t) for t in terms])


def _prefilter(terms: Sequence[str]) -> ColumnElement[Any]:
    """A superset of the row query for every configuration at once: what the GIN index answers."""
    return _once(_tsquery_and([_tsquery_or([_term(_regconfig(c), t) for c in ALL_CONFIGS]) for t in terms]))


def _matches(vector: ColumnElement[Any], query: ColumnElement[Any]) -> ColumnElement[bool]:
    return vector.bool_op("@@")(query)


@dataclass(frozen=True, slots=True)
class CompiledSearch:
    """The pieces of one search statement for ``query``."""

    where: ColumnElement[bool]
    rank: ColumnElement[float] | None  # None: filters only, newest first
    text_query: ColumnElement[Any] | None  # the row's tsquery of the required words, for ts_headline


def text_query(query: Query, columns: SearchColumns) -> ColumnElement[Any] | None:
    """The row's tsquery of every required word and phrase (in its own language); None without any."""
    required = [*query.words, *query.phrases]
    return _per_row_config(columns, _all_of(required)) if required else None


def compile_search(query: Query, columns: SearchColumns, *, owner: uuid.UUID) -> CompiledSearch:
    required = [*query.words, *query.phrases]
    excluded = [*query.excluded_words, *query.excluded_phrases]
    clauses: list[ColumnElement[bool]] = [columns.owner == owner, columns.deleted_at.is_(None)]
    rank = None
    row_query = text_query(query, columns)
    if row_query is not None:
        clauses += [_matches(columns.vector, _prefilter(required)), _matches(columns.vector, row_query)]
        rank = _rank(columns, row_query)
    if excluded:
        clauses.append(sa.not_(_matches(columns.vector, _per_row_config(columns, _any_of(excluded)))))
    clauses += [_condition(c, columns) for c in query.conditions]
    return CompiledSearch(sa.and_(*clauses), rank, row_query)


def _rank(columns: SearchColumns, text_query: ColumnElement[Any]) -> ColumnElement[float]:
    """Title-and-tags tier first, then cover density with the default weights {D .1, C .2, B .4, A 1}."""
    in_title = _matches(sa.func.ts_filter(columns.vector, sa.cast(sa.literal("{a}"), _CharArray())), text_query)
    tier = sa.case((in_title, sa.literal(TITLE_TIER)), else_=sa.literal(0.0))
    density = sa.cast(sa.func.ts_rank_cd(columns.vector, text_query, 32), sa.Double)
    return sa.cast(tier, sa.Double) + density


def _condition(condition: Condition, columns: SearchColumns) -> ColumnElement[bool]:
    clause = _filter(condition, columns)
    if condition.negated:
        return sa.not_(sa.func.coalesce(clause, sa.false()))
    return clause


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _contains(array: ColumnElement[list[str]], value: str) -> ColumnElement[bool]:
    return array.bool_op("@>")(sa.cast([value], ARRAY(sa.Text)))


def _filter(condition: Condition, columns: SearchColumns) -> ColumnElement[bool]:
    match condition.filter:
        case TagFilter(tag):
            return _contains(columns.tags, tag)
        case DomainFilter(host):
            return sa.or_(columns.domain == host, columns.domain.endswith("." + host, autoescape=True))
        case CollectionFilter(collection_id):
            return _contains(columns.collection_ids, collection_id)
        case FlagFilter(flag):
            return _flag(flag, columns)
        case DateFilter(bound, day):
            # after: that UTC day inclusive; before: exclusive.
            return columns.sort_time >= _midnight(day) if bound == "after" else columns.sort_time < _midnight(day)


def _flag(flag: Flag, columns: SearchColumns) -> ColumnElement[bool]:
    match flag:
        case Flag.FAVORITE:
            return columns.is_favorite.is_(True)
        case Flag.ARCHIVED:
            return columns.is_archived.is_(True)
        case Flag.UNREAD:
            return columns.last_opened_at.is_(None)
        case Flag.ENRICHED:
            return columns.enrichment_status == "completed"
        case Flag.PENDING:
            return columns.enrichment_status.in_(PENDING_STATUSES)
        case Flag.FAILED:
            return columns.enrichment_status == "failed"


# --- one page --------------------------------------------------------------------------------------


def search_page(
    query: Query,
    columns: SearchColumns,
    selected: Sequence[ColumnElement[Any]],
    *,
    owner: uuid.UUID,
    after: SearchPosition | None,
    limit: int,
) -> sa.Select[Any]:
    """``SELECT selected, rank, sort_time, client_bookmark_id`` for the page after ``after``.

    Order: rank DESC (word queries), then sort time DESC, then client_bookmark_id DESC; fetch
    ``limit + 1`` rows to know whether there is a next page.
    """
    compiled = compile_search(query, columns, owner=owner)
    rank = compiled.rank if compiled.rank is not None else sa.cast(sa.null(), sa.Double)
    inner = (
        sa.select(
            *selected,
            rank.label("search_rank"),
            columns.sort_time.label("search_sort_time"),
            columns.client_bookmark_id.label("search_id"),
        )
        .where(compiled.where)
        .subquery("search")
    )
    keys = [inner.c.search_sort_time, inner.c.search_id]
    if compiled.rank is not None:
        keys.insert(0, inner.c.search_rank)
    statement = sa.select(inner).order_by(*(k.desc() for k in keys)).limit(limit)
    if after is not None:
        bound: list[ColumnElement[Any]] = [
            sa.literal(after.sort_time, sa.DateTime(timezone=True)),
            sa.literal(after.client_bookmark_id, sa.Text),
        ]
        if compiled.rank is not None:
            bound.insert(0, sa.literal(after.rank, sa.Double))
        statement = statement.where(sa.tuple_(*keys) < sa.tuple_(*bound))
    return statement


def position_of(row: sa.Row[Any]) -> SearchPosition:
    """The keyset of a row returned by :func:`search_page`: give the last row's to the next cursor."""
    return SearchPosition(row.search_rank, row.search_sort_time, row.search_id)


def headline(query: Query, columns: SearchColumns, text: str) -> ColumnElement[str] | None:
    """``ts_headline`` over ``text`` (one bookmark's best field, original spelling) for a result row.

    Returns None for filter-only queries. Give the result and ``text`` to
    :func:`bookmarks.search.snippet.render_snippet`.
    """
    row_query = text_query(query, columns)
    if row_query is None:
        return None
    return sa.func.ts_headline(
        columns.config, sa.literal(headline_document(text)), row_query, sa.literal(HEADLINE_OPTIONS)
    )


__all__ = [
    "ALL_CONFIGS",
    "CompiledSearch",
    "SearchColumns",
    "SearchDocument",
    "compile_search",
    "config_for_language",
    "headline",
    "position_of",
    "search_page",
    "search_tags",
    "search_vector",
    "text_query",
]
