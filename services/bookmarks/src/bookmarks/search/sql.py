"""The search index and query as SQLAlchemy Core expressions over any table with the search columns.

Index (maintained by the application in the statement that writes the bookmark;
docs/decisions/0049-search-inside-postgresql.md)::

    search_vector       tsvector   exact tokens with positions and weights (A title+tags, B description,
                                   url, domain, saveWhy, C notes, summary, page text) + the stems of the
                                   page's language as positionless lexemes tagged ``<config>:<stem>``
    search_head         tsvector   the same for the A fields only (the ranking tier)
    search_page_vector  tsvector   the page text's part (kept so a PUT can rebuild search_vector)
    search_highlight_vector tsvector the live highlights' part (quotes and notes, weight C), likewise
    search_highlight_texts  text[]   those quotes and notes as written (snippets)
    search_config       regconfig  the page language's configuration, 'simple' when unknown
    search_tags         text[]     folded tags + userTags (for tag:)

The two large vectors are stored out of line without compression (decision 0161): a row test reads the
whole vector. Every text reaching PostgreSQL is folded in Python first
(:func:`bookmarks.search.folding.fold`). Fields are separated by :data:`GAP_WORD` runs, deleted
afterwards, so a phrase never spans two fields.

Query: each required word ``t`` is the constant tsquery ``exact(t) | french:stem(t) | german:stem(t) …``
(one alternative per configuration), so the GIN index answers it exactly: a French stem exists only in
French rows. The stems come from PostgreSQL itself (:func:`stems_statement`, one small round trip) and
the tsquery is a bound constant, so the planner estimates its selectivity from the column statistics.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSQUERY, TSVECTOR
from sqlalchemy.sql.elements import ColumnElement

from bookmarks.search.cursor import SearchPosition
from bookmarks.search.folding import fold
from bookmarks.search.query import (
    CollectionFilter,
    DateFilter,
    DomainFilter,
    Filter,
    Flag,
    FlagFilter,
    Has,
    HasFilter,
    LinkFilter,
    Query,
    TagFilter,
)
from bookmarks.search.snippet import HEADLINE_OPTIONS
from bookmarks.store.tables import ab_lexemes

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
STEM_CONFIGS: Final = tuple(sorted(set(LANGUAGE_CONFIGS.values())))
ALL_CONFIGS: Final = (SIMPLE, *STEM_CONFIGS)
# A number: every built-in configuration keeps digits as they are, so one ts_delete removes it everywhere.
GAP_WORD: Final = "90210902109021090210"
_GAP: Final = " " + " ".join([GAP_WORD] * 8) + " "
MAX_PAGE_TEXT_CHARS: Final = 32_000  # tsvector positions stop at 16,383
PENDING_STATUSES: Final = ("pending", "processing", "retrying")
BROKEN_LINK_STATUSES: Final = ("gone", "unreachable")
STEM_TAG_SEPARATOR: Final = ":"
_JOIN: Final = "\x01"
_NO_MATCH: Final = "search:no-match"  # a lexeme no row holds (no configuration is called "search")


def config_for_language(language: str | None) -> str:
    """``"fr"``, ``"fr-CA"``, ``"FR_fr"`` → ``"french"``; unknown or missing → ``"simple"``."""
    if not language:
        return SIMPLE
    return LANGUAGE_CONFIGS.get(language.replace("_", "-").split("-")[0].lower(), SIMPLE)


@dataclass(frozen=True, slots=True)
class SearchColumns:
    """The columns search reads, so the builder attaches to whichever table carries them."""

    table: sa.Table
    owner: ColumnElement[uuid.UUID]
    client_bookmark_id: ColumnElement[str]
    deleted_at: ColumnElement[datetime]
    vector: ColumnElement[Any]
    head: ColumnElement[Any]
    # ts_filter(search_vector, '{a,b}'): the expression of the middle tier's GIN index (ix_bookmarks_search_ab).
    ab_vector: ColumnElement[Any]
    config: ColumnElement[Any]
    tags: ColumnElement[list[str]]
    domain: ColumnElement[str]
    collection_ids: ColumnElement[list[str]]
    is_favorite: ColumnElement[bool]
    is_archived: ColumnElement[bool]
    last_opened_at: ColumnElement[datetime]
    enrichment_status: ColumnElement[str]
    link_status: ColumnElement[str]
    highlight_texts: ColumnElement[list[str]]
    sort_time: ColumnElement[datetime]

    @classmethod
    def of(cls, table: sa.Table) -> SearchColumns:
        """The column names (``owner_uid``, ``search_vector``, ...) of ``table``."""
        c = table.c
        return cls(
            table=table,
            owner=c.owner_uid,
            client_bookmark_id=c.client_bookmark_id,
            deleted_at=c.deleted_at,
            vector=c.search_vector,
            head=c.search_head,
            ab_vector=ab_lexemes(c.search_vector),
            config=c.search_config,
            tags=c.search_tags,
            domain=c.domain,
            collection_ids=c.collection_ids,
            is_favorite=c.is_favorite,
            is_archived=c.is_archived,
            last_opened_at=c.last_opened_at,
            enrichment_status=c.enrichment_status,
            link_status=c.link_status,
            highlight_texts=c.search_highlight_texts,
            sort_time=sort_time(table),
        )


def sort_time(table: sa.Table) -> ColumnElement[datetime]:
    """``coalesce(client_saved_at, created_at)``: the newest-first order (and its expression index)."""
    return sa.func.coalesce(table.c.client_saved_at, table.c.created_at)


# --- the index -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """What one bookmark's own fields contribute to the index, original spelling (folded here)."""

    title: str | None = None
    tags: Sequence[str] = ()
    user_tags: Sequence[str] = ()
    description: str | None = None
    url: str | None = None
    domain: str | None = None
    save_why: str | None = None
    notes: str | None = None
    summary: str | None = None

    def weighted_texts(self) -> list[tuple[str, str]]:
        """(weight, folded text) with fields separated by :data:`_GAP`; empty weights left out."""
        groups = (
            ("A", [self.title, *self.tags, *self.user_tags]),
            ("B", [self.description, self.url, self.domain, self.save_why]),
            ("C", [self.notes, self.summary]),
        )
        weighted = []
        for weight, fields in groups:
            texts = [index_text(f) for f in fields if f and f.strip()]
            if texts:
                weighted.append((weight, _GAP.join(texts)))
        return weighted


def index_text(text: str) -> str:
    """``text`` as indexed: folded, and ``<`` blanked (the parser would swallow ``<script>…`` as markup)."""
    return fold(text).replace("<", " ")


def page_index_text(page_text: str | None) -> str:
    """The page text as indexed (first :data:`MAX_PAGE_TEXT_CHARS` characters)."""
    return index_text((page_text or "")[:MAX_PAGE_TEXT_CHARS])


def search_tags(tags: Iterable[str], user_tags: Iterable[str]) -> list[str]:
    """The ``search_tags`` column: every tag folded, whitespace collapsed, duplicates removed, sorted."""
    return sorted({" ".join(fold(t).split()) for t in (*tags, *user_tags)} - {""})


def regconfig(name: str) -> ColumnElement[Any]:
    return sa.cast(sa.literal(name), REGCONFIG)


def _empty_vector() -> ColumnElement[Any]:
    return sa.cast(sa.literal(""), TSVECTOR)


FUNCTION_END: Final = "$f$;"


def split_functions(text: str) -> list[str]:
    """The ``CREATE FUNCTION`` statements of :func:`index_functions_sql` (asyncpg runs one at a time)."""
    return [part.strip() + FUNCTION_END for part in text.split(FUNCTION_END) if part.strip()]


def index_functions_sql() -> str:
    """The SQL functions that build the index from folded text (frozen by migration 0004_search).

    ``search_stems(cfg, t)``: ``cfg``'s stems of ``t`` as positionless lexemes ``<cfg>:<stem>`` (none
    for 'simple'); ``search_fields_vector(cfg, a, b, c)``: exact tokens of the A, B and C texts with
    positions and weights, gap words between them deleted, then the stems; ``search_head_vector(cfg,
    a)``: the same for A alone; ``search_page_vector(cfg, p)``: page text at weight C after a gap. Being
    functions, a write sends four texts and PostgreSQL does the rest (nothing to build per write).
    ``search_full_vector(fields, highlights, page)`` (migration 0021): :func:`full_vector`.
    """
    gap = f"to_tsvector('simple', '{_GAP}')"
    exact = "setweight(to_tsvector('simple', {t}), '{w}')"
    stems = "search_stems(cfg, {t})"
    return "\n".join([
        "CREATE OR REPLACE FUNCTION search_stems(cfg regconfig, t text) RETURNS tsvector",
        "LANGUAGE sql STABLE PARALLEL SAFE AS $f$",
        "  SELECT CASE WHEN cfg = 'simple'::regconfig THEN ''::tsvector ELSE coalesce(",
        f"    (SELECT array_to_tsvector(array_agg(cfg::text || '{STEM_TAG_SEPARATOR}' || lexeme))",
        "     FROM unnest(tsvector_to_array(to_tsvector(cfg, t))) AS lexeme), ''::tsvector) END",
        "$f$;",
        "CREATE OR REPLACE FUNCTION search_fields_vector(cfg regconfig, a text, b text, c text) RETURNS tsvector",
        "LANGUAGE sql STABLE PARALLEL SAFE AS $f$",
        f"  SELECT ts_delete({exact.format(t='a', w='A')} || {gap} || {exact.format(t='b', w='B')} || {gap}",
        f"    || {exact.format(t='c', w='C')}, '{GAP_WORD}') || {stems.format(t=chr(40) + 'a || b || c' + chr(41))}",
        "$f$;",
        "CREATE OR REPLACE FUNCTION search_head_vector(cfg regconfig, a text) RETURNS tsvector",
        "LANGUAGE sql STABLE PARALLEL SAFE AS $f$",
        f"  SELECT ts_delete({exact.format(t='a', w='A')}, '{GAP_WORD}') || {stems.format(t='a')}",
        "$f$;",
        "CREATE OR REPLACE FUNCTION search_page_vector(cfg regconfig, p text) RETURNS tsvector",
        "LANGUAGE sql STABLE PARALLEL SAFE AS $f$",
        f"  SELECT ts_delete({gap} || {exact.format(t='p', w='C')}, '{GAP_WORD}') || {stems.format(t='p')}",
        "$f$;",
        "CREATE OR REPLACE FUNCTION search_full_vector(fields tsvector, highlights tsvector, page tsvector)",
        "RETURNS tsvector LANGUAGE plpgsql IMMUTABLE AS $f$",  # a subtransaction: never in a parallel query
        "BEGIN",
        "  IF highlights = ''::tsvector AND page = ''::tsvector THEN",
        "    RETURN fields;",
        "  END IF;",
        "  BEGIN",
        "    RETURN fields || highlights || page;",
        "  EXCEPTION WHEN program_limit_exceeded THEN",
        "    BEGIN",
        "      RETURN fields || highlights;",
        "    EXCEPTION WHEN program_limit_exceeded THEN",
        "      RETURN fields;",
        "    END;",
        "  END;",
        "END",
        "$f$;",
    ])  # fmt: skip


def group_texts(document: SearchDocument) -> dict[str, str]:
    """Folded A, B, C texts, each ending in a space so the three can be joined for stemming."""
    texts = {"A": "", "B": "", "C": ""}
    texts |= {weight: text + " " for weight, text in document.weighted_texts()}
    return texts


def fields_vector_of(
    config: ColumnElement[Any], a: ColumnElement[Any] | str, b: ColumnElement[Any] | str, c: ColumnElement[Any] | str
) -> ColumnElement[Any]:
    """The own fields' vector from the folded texts of :func:`group_texts` (values or bound parameters)."""
    return sa.func.search_fields_vector(config, a, b, c, type_=TSVECTOR)


def head_vector_of(config: ColumnElement[Any], a: ColumnElement[Any] | str) -> ColumnElement[Any]:
    return sa.func.search_head_vector(config, a, type_=TSVECTOR)


def fields_vector(document: SearchDocument, config: ColumnElement[Any]) -> ColumnElement[Any]:
    """The bookmark's own fields: exact tokens with positions, then ``config``'s tagged stems."""
    texts = group_texts(document)
    return fields_vector_of(config, texts["A"], texts["B"], texts["C"])


def head_vector(document: SearchDocument, config: ColumnElement[Any]) -> ColumnElement[Any]:
    """The A fields only (title, tags, userTags): what puts a result in the top tier."""
    return head_vector_of(config, group_texts(document)["A"])


def page_vector(page_text: str | None, config: ColumnElement[Any]) -> ColumnElement[Any]:
    """The page text's part: weight C, starting with a gap so no phrase joins it to the fields before it."""
    return sa.func.search_page_vector(config, page_index_text(page_text), type_=TSVECTOR)


MAX_HIGHLIGHT_TEXT_CHARS: Final = 32_000


def highlight_texts(pieces: Iterable[str]) -> list[str]:
    """What search keeps of a bookmark's live highlights (quotes and notes, in the order given): the
    non-blank ones, until :data:`MAX_HIGHLIGHT_TEXT_CHARS` characters in all (the last one cut there)."""
    kept: list[str] = []
    budget = MAX_HIGHLIGHT_TEXT_CHARS
    for piece in pieces:
        if budget <= 0:
            break
        if piece.strip():
            kept.append(piece[:budget])
            budget -= len(kept[-1])
    return kept


def highlight_index_text(texts: Sequence[str]) -> str:
    """The folded text of :func:`highlight_texts`, pieces separated by gaps (no phrase spans two)."""
    return _GAP.join(index_text(t) for t in texts)


def highlight_vector_of(config: ColumnElement[Any], text: ColumnElement[Any] | str) -> ColumnElement[Any]:
    """The highlights' part of ``search_vector``: weight C like notes, after a gap, with ``config``'s stems."""
    return sa.func.search_page_vector(config, text, type_=TSVECTOR)


def full_vector(
    fields: ColumnElement[Any], highlights: ColumnElement[Any] | None = None, page: ColumnElement[Any] | None = None
) -> ColumnElement[Any]:
    """``search_vector`` = own fields ‖ highlights ‖ page text (each part's positions follow the one
    before). PostgreSQL holds at most 1 MB of lexemes and positions in one tsvector: each text is within
    its own limit, but folding can triple one (a Hangul syllable is three letters), and together they
    can pass it. Then the vector leaves out the page's part, and if still too long the highlights' part
    (``search_full_vector``, migration 0021), and the write succeeds. None: the part is known to be empty
    (a new row has no highlights; a PUT brings no page)."""
    if highlights is None and page is None:
        return fields
    return sa.func.search_full_vector(fields, _or_empty(highlights), _or_empty(page), type_=TSVECTOR)


def _or_empty(part: ColumnElement[Any] | None) -> ColumnElement[Any]:
    return _empty_vector() if part is None else part


# --- the query -------------------------------------------------------------------------------------


def stems_statement(
    terms: Sequence[str] | ColumnElement[Any], configs: ColumnElement[Any] | None = None
) -> sa.Select[Any]:
    """Rows ``(term, config, exact, lexemes)``: for each term (``terms``: a list, or an array expression)
    and each configuration of ``configs`` (an array expression; default every one of
    :data:`STEM_CONFIGS`, and only those are used), the term's lexemes in that configuration, and its exact
    ``phraseto_tsquery('simple')`` text; a term gets one row with no configuration when ``configs`` is
    empty. One small statement whatever the number of terms. Give the rows to :func:`TextMatch.build`.
    """
    known = sa.literal(list(STEM_CONFIGS), ARRAY(sa.Text))
    term = (
        sa.func.unnest(terms if isinstance(terms, ColumnElement) else sa.literal(list(terms), ARRAY(sa.Text)))
        .table_valued("term", with_ordinality="n")
        .render_derived(name="terms")
    )
    config = sa.func.unnest(known if configs is None else configs).table_valued("config").render_derived(name="configs")
    return sa.select(
        (term.c.n - 1).label("term"),
        config.c.config,
        sa.cast(sa.func.phraseto_tsquery(regconfig(SIMPLE), term.c.term), sa.Text).label("exact"),
        sa.func.tsvector_to_array(sa.func.to_tsvector(sa.cast(config.c.config, REGCONFIG), term.c.term)).label(
            "lexemes"
        ),
    ).select_from(term.outerjoin(config, config.c.config == sa.func.any(known)))


# An operand of PostgreSQL's text form of a tsquery: a quoted lexeme, ``''`` and ``\\x`` escaped inside.
_OPERAND: Final = re.compile(r"'(?:[^'\\]|''|\\.)*'")


def _quote_lexeme(lexeme: str) -> str:
    """A tsquery operand that is exactly ``lexeme`` (quotes doubled, backslashes escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_lexemes(text: str) -> list[str]:
    """The lexemes of a tsquery's text form, in order (the inverse of :func:`_quote_lexeme` on each operand)."""
    return [re.sub(r"\\(.)", r"\1", operand[1:-1].replace("''", "'")) for operand in _OPERAND.findall(text)]


def _word_query(exact: str, stems: Mapping[str, Sequence[str]]) -> str:
    alternatives = [f"( {exact} )"] if exact.strip() else []
    for config, lexemes in stems.items():
        if lexemes:
            tagged = [_quote_lexeme(config + STEM_TAG_SEPARATOR + lexeme) for lexeme in lexemes]
            alternatives.append("( " + " & ".join(tagged) + " )")
    return "( " + " | ".join(alternatives) + " )" if alternatives else ""


@dataclass(frozen=True, slots=True)
class TextMatch:
    """The tsquery texts of a query's words: every required term (AND), any excluded term (OR)."""

    required: str | None
    excluded: str | None
    # Per required term: its exact tsquery text and its stems per configuration (for snippets).
    required_terms: tuple[tuple[str, Mapping[str, tuple[str, ...]]], ...] = ()
    # Every required term's exact tokens at weight A or B (title, tags, description, URL, domain, saveWhy):
    # the middle tier. None when a required term has no exact token.
    fields: str | None = None

    @property
    def ab_fields(self) -> str | None:
        """:attr:`fields` without its weight labels, for the A and B lexemes alone (``ab_lexemes``): the
        same rows, read from the middle tier's own GIN index without a recheck of weights."""
        if self.fields is None:
            return None
        return " & ".join("( " + exact + " )" for exact, _ in self.required_terms)

    def headline_query(self, config: str) -> str | None:
        """The required terms as ``config`` parses a text: exact tokens or its (untagged) stems."""
        parts = []
        for exact, stems in self.required_terms:
            alternatives = [f"( {exact} )"] if exact.strip() else []
            if stems.get(config):
                alternatives.append("( " + " & ".join(_quote_lexeme(s) for s in stems[config]) + " )")
            if alternatives:
                parts.append("( " + " | ".join(alternatives) + " )")
        return " & ".join(parts) or None

    @staticmethod
    def terms(query: Query) -> list[str]:
        """Every word and phrase whose stems :func:`stems_statement` must look up (in this order)."""
        return [*query.words, *query.phrases, *query.excluded_words, *query.excluded_phrases]

    @classmethod
    def build(cls, query: Query, rows: Iterable[Mapping[str, Any]]) -> TextMatch:
        """From the rows of ``stems_statement(TextMatch.terms(query))`` (none when there are no terms)."""
        terms = cls.terms(query)
        exact: dict[int, str] = {}
        stems: dict[int, dict[str, tuple[str, ...]]] = {i: {} for i in range(len(terms))}
        for row in rows:
            exact[row["term"]] = row["exact"] or ""
            if row["lexemes"]:
                stems[row["term"]][row["config"]] = tuple(row["lexemes"])
        phrase_start = len(query.words)
        excluded_start = len(query.words) + len(query.phrases)
        parts: list[str] = []
        required_terms = []
        for i in range(len(terms)):
            is_phrase = phrase_start <= i < excluded_start or i >= excluded_start + len(query.excluded_words)
            # Phrases keep word order: exact tokens only (stems carry no positions).
            term_stems = {} if is_phrase else dict(sorted(stems[i].items()))
            parts.append(_word_query(exact.get(i, ""), term_stems))
            if i < excluded_start:
                required_terms.append((exact.get(i, ""), term_stems))
        required = [p for p in parts[:excluded_start] if p]
        excluded = [p for p in parts[excluded_start:] if p]
        if len(required) < excluded_start:  # a required term with nothing to match: nothing matches
            required.append(_quote_lexeme(_NO_MATCH))
        exact_parts = [e for e, _ in required_terms]
        fields = None
        if exact_parts and all(e.strip() for e in exact_parts):
            fields = " & ".join("( " + _OPERAND.sub(lambda m: m.group(0) + ":AB", e) + " )" for e in exact_parts)
        return cls(" & ".join(required) or None, " | ".join(excluded) or None, tuple(required_terms), fields)


def _bound(values: Mapping[str, Any], name: str, type_: Any) -> ColumnElement[Any]:
    """The bound parameter ``name`` with its value in ``values``. A statement built for one query carries
    its values; built once for a shape (:func:`search_shape`), it takes another query's at execution."""
    return sa.bindparam(name, values[name], type_=type_)


def _tsquery(values: Mapping[str, Any], name: str) -> ColumnElement[Any]:
    return sa.cast(_bound(values, name, sa.Text()), TSQUERY)


def _matches(vector: ColumnElement[Any], query: ColumnElement[Any]) -> ColumnElement[bool]:
    return vector.bool_op("@@")(query)


def _match_function(vector: ColumnElement[Any], query: ColumnElement[Any]) -> ColumnElement[bool]:
    """``vector @@ query`` as a function call: the same test, never an index condition."""
    return sa.func.ts_match_vq(vector, query, type_=sa.Boolean)


# A tier's read: the tier (None: filter-only), the position to continue after, its window (None: unbounded).
TierRead = tuple[float | None, SearchPosition | None, int | None]


def _tag(tier: float | None) -> str:
    return "all" if tier is None else _TIER_TAGS[tier]


def search_values(
    query: Query,
    match: TextMatch,
    *,
    owner: uuid.UUID,
    limit: int,
    reads: Iterable[TierRead] = (),
    middle_tier: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Every value a search statement binds, by name (``search_…``): the query's, each tier read's
    position and window, and the ids of the whole middle tier when the page has read it (``middle_tier``,
    see :func:`_outside_the_middle_tier`). The only place they are derived; statements refer to them by
    name."""
    values: dict[str, Any] = {"search_owner": owner, "search_limit": limit}
    texts = {"required": match.required, "excluded": match.excluded, "fields": match.fields,
             "ab_fields": match.ab_fields}  # fmt: skip
    values |= {f"search_{key}": text for key, text in texts.items() if text is not None}
    if match.fields is not None:
        values |= {"search_mid_known": middle_tier is not None, "search_mid_ids": list(middle_tier or ())}
    for i, condition in enumerate(query.conditions):
        values |= _filter_values(condition.filter, f"search_c{i}", indexed_domain=match.required is None)
    for tier, after, window in reads:
        tag = _tag(tier)
        if after is not None:
            values |= {f"search_{tag}_after_time": after.sort_time, f"search_{tag}_after_id": after.client_bookmark_id}
        if window is not None:
            values[f"search_{tag}_skip"] = window - 1
    return values


def search_shape(query: Query, match: TextMatch, reads: Iterable[TierRead]) -> tuple[Any, ...]:
    """What decides a search statement's SQL besides :func:`search_values`: statements of one shape
    differ only in their values, so one built for a shape serves every query of it."""
    texts = (match.required, match.excluded, match.fields, match.ab_fields)
    conditions = tuple((c.negated, _filter_shape(c.filter)) for c in query.conditions)
    tiers = tuple((tier, after is None, window is None) for tier, after, window in reads)
    return tuple(text is None for text in texts), conditions, tiers


def _filter_shape(condition: Filter) -> tuple[str, Any]:
    """The filter's kind, and what of it the SQL depends on (a flag, a bound), not its value."""
    detail: Any = None
    match condition:
        case FlagFilter(flag):
            detail = flag
        case HasFilter(what):
            detail = what
        case DateFilter(bound, _):
            detail = bound
    return type(condition).__name__, detail


def _like_escaped(text: str) -> str:
    """``text`` as a LIKE pattern matching itself (escape character ``/``)."""
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_")


def _filter_values(condition: Filter, name: str, *, indexed_domain: bool) -> dict[str, Any]:
    match condition:
        case TagFilter(tag):
            return {name: [tag]}
        case DomainFilter(host) if not indexed_domain:
            return {name: host, f"{name}_like": "%." + _like_escaped(host)}
        case DomainFilter(host):
            # The host or a subdomain, as ranges of the reversed domain in byte order (the index of
            # migration 0018): ``moc.elpmaxe``, or from ``moc.elpmaxe.`` up to ``moc.elpmaxe/`` ("/"
            # follows "."), so ``notexample.com`` (``moc.elpmaxeton``) is outside both.
            key = host[::-1]
            return {name: key, f"{name}_from": key + ".", f"{name}_to": key + "/"}
        case CollectionFilter(collection_id):
            return {name: [collection_id]}
        case LinkFilter(status):
            return {name: status.value}
        case DateFilter(_, day):
            return {name: _midnight(day)}
        case _:
            return {}


def every_match(query: Query, match: TextMatch, columns: SearchColumns, owner: uuid.UUID) -> list[Any]:
    """The WHERE clauses of every live bookmark the query matches, in no order and unranked (a bulk
    change by query acts on all of them, not on a page)."""
    values = search_values(query, match, owner=owner, limit=0)
    where = _base_clauses(query, match, columns, values)
    if match.required is not None:
        where.append(_matches(columns.vector, _tsquery(values, "search_required")))
    return where


def _base_clauses(query: Query, match: TextMatch, columns: SearchColumns, values: Mapping[str, Any]) -> list[Any]:
    return [
        *_owned(columns, values),
        *_excluded_words(match, columns, values),
        *_conditions(query, match, columns, values),
    ]


def _owned(columns: SearchColumns, values: Mapping[str, Any]) -> list[ColumnElement[bool]]:
    """The owner's live rows."""
    return [columns.owner == _bound(values, "search_owner", columns.owner.type), columns.deleted_at.is_(None)]


def _excluded_words(match: TextMatch, columns: SearchColumns, values: Mapping[str, Any]) -> list[ColumnElement[bool]]:
    if match.excluded is None:
        return []
    return [sa.not_(_matches(columns.vector, _tsquery(values, "search_excluded")))]


def _conditions(query: Query, match: TextMatch, columns: SearchColumns, values: Mapping[str, Any]) -> list[Any]:
    """The query's filters (``tag:``, ``domain:``, ``is:``…), negated ones included."""
    # With words, the GIN index finds the rows: a domain: condition the planner could read from its own
    # index would compete with it, on a domain's row estimate against a tsquery's poor one.
    indexed_domain = match.required is None
    clauses: list[ColumnElement[bool]] = []
    for i, condition in enumerate(query.conditions):
        clause = _filter(condition.filter, columns, values, f"search_c{i}", indexed_domain)
        clauses.append(sa.not_(sa.func.coalesce(clause, sa.false())) if condition.negated else clause)
    return clauses


def _after_filters(conditions: Sequence[Any], tests: Sequence[Any]) -> list[Any]:
    """``tests`` (row tests that read a search vector) made to run only on rows the query's filters keep.
    PostgreSQL orders a row's conditions by their estimated cost, which knows nothing of the toasted
    vector a test reads: it tested every row a word's GIN read fetched before its ``domain:``, which
    kept 5 % of them (57 ms at 100,000 bookmarks against 2 ms). A ``CASE`` is evaluated in its order;
    the filters stay conditions of their own too, so the planner still reads them from their indexes."""
    if not conditions or not tests:
        return list(tests)
    return [sa.case((sa.and_(*conditions), sa.and_(*tests)), else_=sa.false())]


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _contains(array: ColumnElement[list[str]], values: Mapping[str, Any], name: str) -> ColumnElement[bool]:
    return array.bool_op("@>")(sa.cast(_bound(values, name, ARRAY(sa.Text)), ARRAY(sa.Text)))


def _filter(
    condition: Filter, columns: SearchColumns, values: Mapping[str, Any], name: str, indexed_domain: bool
) -> ColumnElement[bool]:
    """The condition's SQL; its values (:func:`_filter_values`) bound under ``name``."""
    match condition:
        case TagFilter():
            return _contains(columns.tags, values, name)
        case DomainFilter() if not indexed_domain:
            # The same rows as below, in a form no index serves.
            like = _bound(values, f"{name}_like", sa.Text())
            return sa.or_(columns.domain == _bound(values, name, sa.Text()), columns.domain.like(like, escape="/"))
        case DomainFilter():
            reversed_domain = sa.func.reverse(columns.domain).collate("C")
            key, start, end = (_bound(values, n, sa.Text()) for n in (name, f"{name}_from", f"{name}_to"))
            return sa.or_(reversed_domain == key, sa.and_(reversed_domain >= start, reversed_domain < end))
        case CollectionFilter():
            return _contains(columns.collection_ids, values, name)
        case FlagFilter(flag):
            return _flag(flag, columns)
        case HasFilter(Has.HIGHLIGHTS):
            # The index keeps the live highlights' texts, never none for a bookmark that has one.
            return sa.func.cardinality(columns.highlight_texts) > 0
        case LinkFilter():
            return columns.link_status == _bound(values, name, sa.Text())
        case DateFilter(bound):
            # after: that UTC day inclusive; before: exclusive.
            midnight = _bound(values, name, sa.DateTime(timezone=True))
            return columns.sort_time >= midnight if bound == "after" else columns.sort_time < midnight


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
        case Flag.BROKEN:
            return columns.link_status.in_(BROKEN_LINK_STATUSES)


# --- one page --------------------------------------------------------------------------------------

TOP_TIER: Final = 1.0  # every required word is in the title or the tags
MID_TIER: Final = 0.5  # every required word, as written, is in the fields at weight A or B (TextMatch.fields)
BODY_TIER: Final = 0.0  # the rest: a word only in notes, summary, highlights, page text, or only by its stem
_TIER_TAGS: Final = {TOP_TIER: "top", MID_TIER: "mid", BODY_TIER: "body"}


def _newest_first(
    columns: SearchColumns,
    values: Mapping[str, Any],
    selected: Sequence[ColumnElement[Any]],
    where: Sequence[Any],
    tier: float | None,
    after: SearchPosition | None,
    window: int | None = None,
) -> sa.Select[Any]:
    """One keyset walk newest first: ``(sort_time, id) < after`` ordered by the sort-time index. With
    ``window`` (at least 1), only the owner's ``window`` newest live rows after ``after`` (and any sharing
    the last one's sort time) are candidates: a bounded walk, whose cost does not depend on how few rows
    match. Values from :func:`search_values`."""
    tag = _tag(tier)
    keyset = [] if after is None else [
        sa.tuple_(columns.sort_time, columns.client_bookmark_id)
        < sa.tuple_(_bound(values, f"search_{tag}_after_time", sa.DateTime(timezone=True)),
                    _bound(values, f"search_{tag}_after_id", sa.Text()))
    ]  # fmt: skip
    newest = (columns.sort_time.desc(), columns.client_bookmark_id.desc())
    statement = _selection(columns, tuple(selected), tier).where(*where, *keyset)
    if window is not None:
        # The window's oldest sort time (the window-th newest live row after ``after``); rows at or after it
        # are a newest-first prefix, so the walk's range ends there. No such row: the whole rest.
        boundary = (
            sa.select(columns.sort_time)
            .where(columns.owner == _bound(values, "search_owner", columns.owner.type), columns.deleted_at.is_(None),
                   *keyset)
            .order_by(*newest)
            .offset(_bound(values, f"search_{tag}_skip", sa.Integer()))
            .limit(1)
            .scalar_subquery()
        )  # fmt: skip
        floor = sa.cast(sa.literal("-infinity"), sa.DateTime(timezone=True))
        statement = statement.where(columns.sort_time >= sa.func.coalesce(boundary, floor))
    return statement.order_by(*newest).limit(_bound(values, "search_limit", sa.Integer()))


@functools.lru_cache(maxsize=32)
def _selection(columns: SearchColumns, selected: tuple[ColumnElement[Any], ...], tier: float | None) -> sa.Select[Any]:
    """``SELECT selected, search_rank, search_sort_time, search_id`` (built once: coercing dozens of columns
    is most of the Python a statement costs; ``where`` and ``order_by`` copy it)."""
    rank = sa.cast(sa.null() if tier is None else sa.literal(tier), sa.Double)
    return sa.select(
        *selected,
        rank.label("search_rank"),
        columns.sort_time.label("search_sort_time"),
        columns.client_bookmark_id.label("search_id"),
    )


def tiers_to_read(match: TextMatch, after: SearchPosition | None) -> list[tuple[float | None, SearchPosition | None]]:
    """The tiers a page reads, in result order, each with the position to continue after (None: its start).

    Filter-only: one walk (tier None). With words: the top tier (every word in the title or tags), the
    middle tier (every word as written in the fields at weight A or B) when the words have exact tokens,
    then the body tier; a cursor in a tier skips the tiers above it.
    """
    if match.required is None:
        return [(None, after)]
    tiers = (TOP_TIER, MID_TIER, BODY_TIER) if match.fields is not None else (TOP_TIER, BODY_TIER)
    if after is None or after.rank is None:
        return [(tier, None) for tier in tiers]
    rank = after.rank
    return [(tier, after if tier == rank else None) for tier in tiers if tier <= rank]


def tier_page(
    query: Query,
    match: TextMatch,
    columns: SearchColumns,
    selected: Sequence[ColumnElement[Any]],
    *,
    owner: uuid.UUID,
    tier: float | None,
    after: SearchPosition | None,
    limit: int,
    window: int | None = None,
    values: Mapping[str, Any] | None = None,
) -> sa.Select[Any]:
    """One tier of :func:`tiers_to_read`, newest first after ``after``: ``LIMIT``-ed, so a common word costs
    what a page costs; with ``window``, among the ``window`` newest rows only (see :func:`_newest_first`).
    ``SELECT selected, search_rank, search_sort_time, search_id``. ``values``: :func:`search_values` of
    every read of the statement this one is part of (default: of this read alone)."""
    if values is None:
        values = search_values(query, match, owner=owner, limit=limit, reads=[(tier, after, window)])
    owned, conditions = _owned(columns, values), _conditions(query, match, columns, values)
    excluded = _excluded_words(match, columns, values)
    if tier is None or match.required is None:
        return _newest_first(columns, values, selected, [*owned, *excluded, *conditions], None, after, window)
    found, tests = _tier_tests(match, columns, values, tier, excluded, window is not None)
    where = [*owned, *conditions, *found, *_after_filters(conditions, tests)]
    return _newest_first(columns, values, selected, where, tier, after, window)


def _tier_tests(
    match: TextMatch, columns: SearchColumns, values: Mapping[str, Any], tier: float, excluded: list[Any], walk: bool
) -> tuple[list[Any], list[Any]]:
    """A tier's tests of the search vectors: the GIN read's index condition, and the row tests (for a
    window's ``walk``, every test is a row test). A walk tests its rows with the function behind ``@@``,
    which no index serves: it stays the bounded newest-first walk even when a weighted tsquery's low
    estimate would make the GIN index look cheaper (that read rechecks every row holding the words,
    whatever the window)."""
    required = _tsquery(values, "search_required")
    test = _match_function if walk else _matches
    in_head = test(columns.head, required)
    fields = None if match.fields is None else test(columns.vector, _tsquery(values, "search_fields"))
    if tier == TOP_TIER:
        found, tests = [in_head], excluded
    elif tier == MID_TIER and fields is not None and match.ab_fields is not None:
        # The GIN read tests the A and B lexemes (the expression of ix_bookmarks_search_ab), a plain index
        # read; a row test keeps the weighted tsquery on the vector (no ts_filter per row): the same rows.
        in_ab = fields if walk else _matches(columns.ab_vector, _tsquery(values, "search_ab_fields"))
        found, tests = [in_ab], [*excluded, sa.not_(in_head)]
    else:
        found = [test(columns.vector, required)]
        outside = [] if fields is None else [_outside_the_middle_tier(fields, columns, values)]
        tests = [*excluded, sa.not_(in_head), *outside]
    return ([], [*found, *tests]) if walk else (found, tests)


def _outside_the_middle_tier(
    in_fields: ColumnElement[bool], columns: SearchColumns, values: Mapping[str, Any]
) -> ColumnElement[bool]:
    """A body-tier row is not one of the middle tier. When the page has read the whole middle tier
    (``search_mid_known``), its ids say so and no row's vector is read for it: the weighted test reads
    every row's whole vector, toasted page text included (a 2-word query's GIN read of 544 rows: 7.5 ms
    at 100,000 bookmarks, most of it that test). Every search statement is planned for its values
    (:func:`search_plans`), so PostgreSQL folds the ``CASE`` to one branch."""
    known = _bound(values, "search_mid_known", sa.Boolean())
    ids = sa.cast(_bound(values, "search_mid_ids", ARRAY(sa.Text)), ARRAY(sa.Text))
    return sa.case((known, sa.not_(columns.client_bookmark_id == sa.any_(ids))), else_=sa.not_(in_fields))


def search_page(
    query: Query,
    match: TextMatch,
    columns: SearchColumns,
    selected: Sequence[ColumnElement[Any]],
    *,
    owner: uuid.UUID,
    after: SearchPosition | None,
    limit: int,
) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    """The page after ``after`` as one statement: the union of :func:`tier_page` for every tier to read."""
    reads: list[TierRead] = [(tier, tier_after, None) for tier, tier_after in tiers_to_read(match, after)]
    return reads_statement(query, match, columns, selected, owner=owner, reads=reads, limit=limit)


def reads_statement(
    query: Query,
    match: TextMatch,
    columns: SearchColumns,
    selected: Sequence[ColumnElement[Any]],
    *,
    owner: uuid.UUID,
    reads: Sequence[TierRead],
    limit: int,
    window_reads: bool = False,
) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    """The :func:`tier_page` of every read in one statement: in result order, or, with ``window_reads``,
    each in its own order with the bitmap-only scans set for the statements after it."""
    values = search_values(query, match, owner=owner, limit=limit, reads=reads)
    branches = [
        tier_page(query, match, columns, selected, owner=owner, tier=tier, after=after, limit=limit, window=window,
                  values=values)
        for tier, after, window in reads
    ]  # fmt: skip
    return with_planner_settings(branches, bitmap_only=True) if window_reads else in_result_order(branches, limit)


def in_result_order(branches: Sequence[sa.Select[Any]], limit: int) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    """The first ``limit`` rows of the ``UNION ALL`` of :func:`tier_page` statements, in result order (no
    subquery around the union: its dozens of column proxies cost more Python than the rest). ``limit`` is
    bound as the branches' (``search_limit``).

    The first branch is a ``WITH`` query the others count: when it holds a whole page, their condition on
    that count is false before any row is read (a ``One-Time Filter``), so a tier below a full one costs
    nothing (a word's middle tier: every row holding it in a title or description)."""
    if len(branches) == 1:
        return branches[0]
    bound = sa.bindparam("search_limit", limit, type_=sa.Integer())
    first = branches[0].cte("search_first")
    short = sa.select(sa.func.count()).select_from(first).scalar_subquery() < bound
    merged = sa.union_all(sa.select(first), *(branch.where(short) for branch in branches[1:]))
    keys = ("search_rank", "search_sort_time", "search_id")
    ordered = merged.order_by(*(merged.selected_columns[k].desc() for k in keys))
    return ordered.limit(bound)


def with_planner_settings(
    branches: Sequence[sa.Select[Any]], *, bitmap_only: bool
) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    """The rows of every branch (:func:`tier_page` statements, each in its own order), and
    :func:`planner_settings` for the statements after this one, in one statement: the settings are an
    uncorrelated subquery in a condition of the first branch that no column takes part in, which PostgreSQL
    evaluates once, before that branch's first row (``One-Time Filter``), also when no row matches."""
    value = "off" if bitmap_only else "on"
    applied = sa.select(sa.func.concat(*(sa.func.set_config(name, value, True) for name in _SCAN_SETTINGS)))
    first = branches[0].where(applied.scalar_subquery().is_not(None))
    return first if len(branches) == 1 else sa.union_all(first, *branches[1:])


_SCAN_SETTINGS: Final = ("enable_indexscan", "enable_seqscan")


@functools.cache
def planner_settings(*, bitmap_only: bool) -> sa.Select[Any]:
    """``set_config`` for the rest of the transaction: plain index and sequential scans off (only bitmap
    scans, i.e. the GIN indexes) for a tier with few matches, on (the newest-first walk) otherwise."""
    value = "off" if bitmap_only else "on"
    return sa.select(*(sa.func.set_config(name, value, True) for name in _SCAN_SETTINGS))


def search_plans() -> ColumnElement[Any]:
    """``set_config`` for the rest of the transaction, as a column of the page's first statement (it takes
    effect for the statements after it):

    - ``plan_cache_mode`` ``force_custom_plan``: every search statement is planned for its actual values.
      A prepared statement otherwise switches to a generic plan after five runs, made for no tsquery in
      particular and kept whatever :func:`planner_settings` say later (measured: 3-word queries went from
      0.1 s to 1.5 s at 100k).
    - ``enable_seqscan`` off: a page is one owner's rows, and a window read is the bounded walk of the
      newest-first index. Its range ends at a boundary the planner cannot know when it plans (a subquery),
      so with a filter it estimates few matches for (a ``domain:``), it read the whole table in parallel
      and sorted instead (measured: 50-130 ms a tier at 100k against 1-3 ms)."""
    return sa.func.concat(
        sa.func.set_config("plan_cache_mode", "force_custom_plan", True),
        sa.func.set_config("enable_seqscan", "off", True),
    )


def position_of(row: sa.Row[Any]) -> SearchPosition:
    """The keyset of a row returned by :func:`search_page`: give the last row's to the next cursor."""
    return SearchPosition(row.search_rank, row.search_sort_time, row.search_id)


@functools.cache
def headlines_statement() -> sa.Select[Any]:
    """``ts_headline(config, document, query)`` for each triple of the bound arrays ``configs``,
    ``documents`` and ``queries``, in order (column ``headline``): one statement, built once, whatever the
    page. ``documents`` come from :func:`bookmarks.search.snippet.headline_document`; ``queries`` from
    :meth:`TextMatch.headline_query`."""
    arrays = (sa.bindparam(name, type_=ARRAY(sa.Text)) for name in ("configs", "documents", "queries"))
    unnested = sa.func.unnest(*arrays).table_valued("config", "document", "query", with_ordinality="n")
    rows = unnested.render_derived(name="h")
    headline = sa.func.ts_headline(
        sa.cast(rows.c.config, REGCONFIG), rows.c.document, sa.cast(rows.c.query, TSQUERY), HEADLINE_OPTIONS
    )
    return sa.select(headline.label("headline")).select_from(rows).order_by(rows.c.n)


__all__ = [
    "ALL_CONFIGS",
    "SearchColumns",
    "SearchDocument",
    "TextMatch",
    "config_for_language",
    "fields_vector",
    "fields_vector_of",
    "group_texts",
    "full_vector",
    "head_vector",
    "head_vector_of",
    "highlight_index_text",
    "highlight_texts",
    "highlight_vector_of",
    "headlines_statement",
    "in_result_order",
    "page_vector",
    "position_of",
    "reads_statement",
    "planner_settings",
    "search_page",
    "search_plans",
    "search_shape",
    "search_values",
    "tier_page",
    "tiers_to_read",
    "tsquery_lexemes",
    "with_planner_settings",
    "search_tags",
    "stems_statement",
]
