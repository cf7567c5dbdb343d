"""The search index and query builder on a real PostgreSQL, over a throw-away table with the search columns.

The server is the same embedded PostgreSQL 16 the platform runs on (no contrib extensions).
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSVECTOR, UUID
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bookmarks.search.cursor import decode_search_cursor, encode_search_cursor
from bookmarks.search.folding import fold, fold_function_sql
from bookmarks.search.query import Query, parse_query
from bookmarks.search.snippet import headline_document, render_snippet, snippet_window
from bookmarks.search.sql import (
    BODY_TIER,
    MID_TIER,
    SearchColumns,
    SearchDocument,
    TextMatch,
    config_for_language,
    fields_vector,
    full_vector,
    head_vector,
    headlines_statement,
    index_functions_sql,
    page_vector,
    planner_settings,
    position_of,
    regconfig,
    search_page,
    search_tags,
    split_functions,
    stems_statement,
    tier_page,
)
from bookmarks.store.tables import ab_lexemes
from devstack.postgres import EmbeddedPostgres, scratch_data_dir
from devstack.testing import free_port

metadata = sa.MetaData()
probe = sa.Table(
    "search_probe",
    metadata,
    sa.Column("owner_uid", UUID(as_uuid=True), primary_key=True),
    sa.Column("client_bookmark_id", sa.Text, primary_key=True),
    sa.Column("title", sa.Text),
    sa.Column("domain", sa.Text, nullable=False),
    sa.Column("collection_ids", ARRAY(sa.Text), nullable=False),
    sa.Column("is_favorite", sa.Boolean, nullable=False),
    sa.Column("is_archived", sa.Boolean, nullable=False),
    sa.Column("last_opened_at", sa.DateTime(timezone=True)),
    sa.Column("enrichment_status", sa.Text, nullable=False),
    sa.Column("link_status", sa.Text),
    sa.Column("client_saved_at", sa.DateTime(timezone=True)),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("deleted_at", sa.DateTime(timezone=True)),
    sa.Column("search_vector", TSVECTOR, nullable=False),
    sa.Column("search_head", TSVECTOR, nullable=False),
    sa.Column("search_config", REGCONFIG, nullable=False),
    sa.Column("search_tags", ARRAY(sa.Text), nullable=False),
    sa.Column("search_highlight_texts", ARRAY(sa.Text), nullable=False, server_default=sa.text("'{}'")),
    sa.Index("ix_search_probe_vector", "search_vector", postgresql_using="gin"),
    sa.Index("ix_search_probe_tags", "search_tags", postgresql_using="gin"),
    sa.Index("ix_search_probe_head", "search_head", postgresql_using="gin"),
)
# As ix_bookmarks_live_domain (migration 0018).
sa.Index("ix_search_probe_domain", probe.c.owner_uid, sa.func.reverse(probe.c.domain).collate("C"),
         postgresql_where=probe.c.deleted_at.is_(None))  # fmt: skip
# As ix_bookmarks_search_ab (migration 0019).
sa.Index("ix_search_probe_ab", ab_lexemes(probe.c.search_vector), postgresql_using="gin")
COLUMNS = SearchColumns.of(probe)
ALICE = uuid.UUID("aaaaaaaa-0000-0000-0000-000000000001")
BOB = uuid.UUID("bbbbbbbb-0000-0000-0000-000000000002")


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Doc:
    """A bookmark's own fields plus what enrichment brings (page text and its language)."""

    title: str | None = None
    tags: tuple[str, ...] = ()
    user_tags: tuple[str, ...] = ()
    notes: str | None = None
    summary: str | None = None
    description: str | None = None
    page_text: str | None = None
    language: str | None = None

    def fields(self) -> SearchDocument:
        return SearchDocument(
            title=self.title,
            tags=self.tags,
            user_tags=self.user_tags,
            notes=self.notes,
            summary=self.summary,
            description=self.description,
        )


@dataclass(frozen=True)
class Row:
    id: str
    document: Doc
    owner: uuid.UUID = ALICE
    domain: str = "example.com"
    collections: tuple[str, ...] = ()
    favorite: bool = False
    archived: bool = False
    opened: datetime | None = None
    status: str = "pending"
    saved: datetime | None = None
    created: datetime = field(default_factory=lambda: day("2025-01-01"))
    deleted: bool = False


FRENCH_TEXT = "Les politiques ÉCONOMIQUES de la France sont débattues au Parlement depuis des années."
ROWS = [
    Row("fr", Doc(title="Budget 2025", page_text=FRENCH_TEXT, language="fr"), status="completed",
        domain="lemonde.fr", created=day("2025-01-02")),
    Row("en-econom", Doc(title="A note", notes="the econom prefix alone", language="en"),
        created=day("2025-01-03")),
    Row("de", Doc(title="Wohnen", page_text="Die Häuser und Straßen von Berlin", language="de"),
        status="completed", domain="spiegel.de", created=day("2025-01-04")),
    Row("en-hauser", Doc(title="Häuser as a word", language="en"), created=day("2025-01-05")),
    Row("climate", Doc(title="Climate change now", summary="why it matters"),
        collections=("c1",), favorite=True, created=day("2025-01-06")),
    Row("climate-rev", Doc(title="Change of climate", tags=("Science",)), created=day("2025-01-07")),
    Row("span", Doc(title="Talking about climate", tags=["Change"]), created=day("2025-01-08")),
    Row("py-title", Doc(title="Python tips", page_text="snakes are not involved"),
        domain="docs.python.org", created=day("2024-06-01"), saved=day("2025-03-01")),
    Row("py-text", Doc(title="Misc", page_text="python python python python python python"),
        domain="notpython.org", created=day("2025-02-01")),
    Row("py-tag", Doc(title="Snakes", user_tags=("Python", "Reading List")),
        domain="python.org", archived=True, status="failed", created=day("2025-01-20"),
        opened=day("2025-01-21")),
    Row("xss", Doc(title='<script>alert("x")</script> python'), status="processing",
        created=day("2025-01-10")),
    Row("empty", Doc(), domain="empty.example", created=day("2024-12-31")),
    Row("py-desc", Doc(title="Reptiles", description="The python, a snake"), created=day("2025-01-16")),
    Row("py-notes", Doc(title="Zoo", notes="saw a python"), created=day("2025-01-17")),
    Row("tie-a", Doc(title="Tied python"), created=day("2025-01-15")),
    Row("tie-b", Doc(title="Tied python"), created=day("2025-01-15")),
    Row("gone", Doc(title="Python deleted"), deleted=True, created=day("2025-03-01")),
    Row("bob", Doc(title="Python of bob"), owner=BOB, created=day("2025-03-01")),
]  # fmt: skip
BY_ID = {row.id: row for row in ROWS}


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPostgres]:
    with scratch_data_dir("search-sql-", fallback=tmp_path_factory.mktemp("search-sql")) as data_dir:
        with EmbeddedPostgres(data_dir, free_port(), durable=False) as pg:
            pg.ensure_databases(["search"])
            yield pg


@pytest.fixture(scope="module")
async def engine(postgres: EmbeddedPostgres) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(postgres.dsn("search"))
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
        await conn.exec_driver_sql(fold_function_sql())
        for statement in split_functions(index_functions_sql()):
            await conn.exec_driver_sql(statement)
        for row in ROWS:
            await conn.execute(sa.insert(probe).values(**_values(row)))
    yield engine
    await engine.dispose()


def _values(row: Row) -> dict[str, Any]:
    doc = row.document
    config = regconfig(config_for_language(doc.language))
    return {
        "owner_uid": row.owner,
        "client_bookmark_id": row.id,
        "title": doc.title,
        "domain": row.domain,
        "collection_ids": list(row.collections),
        "is_favorite": row.favorite,
        "is_archived": row.archived,
        "last_opened_at": row.opened,
        "enrichment_status": row.status,
        "client_saved_at": row.saved,
        "created_at": row.created,
        "deleted_at": day("2025-03-02") if row.deleted else None,
        "search_vector": full_vector(fields_vector(doc.fields(), config), page_vector(doc.page_text, config)),
        "search_head": head_vector(doc.fields(), config),
        "search_config": config,
        "search_tags": search_tags(doc.tags, doc.user_tags),
    }


async def text_match(conn: Any, query: Query) -> TextMatch:
    terms = TextMatch.terms(query)
    if not terms:
        return TextMatch(None, None)
    return TextMatch.build(query, (await conn.execute(stems_statement(terms))).mappings().all())


async def search(engine: AsyncEngine, q: str, *, owner: uuid.UUID = ALICE, limit: int = 100) -> list[str]:
    query = parse_query(q)
    async with engine.connect() as conn:
        match = await text_match(conn, query)
        statement = search_page(query, match, COLUMNS, [probe.c.client_bookmark_id], owner=owner, after=None,
                                limit=limit)  # fmt: skip
        return [row.client_bookmark_id for row in await conn.execute(statement)]


async def test_sql_fold_equals_python_fold_on_every_assigned_character(engine: AsyncEngine) -> None:
    chars = [chr(c) for c in range(1, 0x110000) if unicodedata.category(chr(c)) not in ("Cn", "Cs")]
    samples = [*chars, "Économiques STRAßE ﬁle İstanbul ᾳ Ⅸ", "Ærøskøbing — Ça coûte 5 €"]
    async with engine.connect() as conn:
        text = sa.func.unnest(sa.literal(samples, ARRAY(sa.Text))).column_valued("t")
        result = await conn.execute(sa.select(text, sa.func.search_fold(text)))
        mismatches = [(text, folded) for text, folded in result if folded != fold(text)]
    assert mismatches == []


async def test_accents_are_folded_before_french_stemming(engine: AsyncEngine) -> None:
    assert await search(engine, "economique") == ["fr"]
    assert await search(engine, "ÉCONOMIQUE Parlements") == ["fr"]


async def test_german_stemming_on_a_german_page(engine: AsyncEngine) -> None:
    assert await search(engine, "haus strasse") == ["de"]


async def test_stems_only_in_the_pages_own_language(engine: AsyncEngine) -> None:
    # French stems "economiques" to "econom"; an English page holding the token "econom" is no match.
    assert "en-econom" not in await search(engine, "economiques")
    # "haus" is German's stem of "häuser", not English's: the English page keeps only exact tokens.
    assert await search(engine, "haus") == ["de"]


async def test_stems_only_in_the_given_configurations_and_exact_tokens_without_any(engine: AsyncEngine) -> None:
    async def match(*configs: str) -> TextMatch:
        query = parse_query("économiques")
        statement = stems_statement(TextMatch.terms(query), sa.literal(list(configs), ARRAY(sa.Text)))
        async with engine.connect() as conn:
            return TextMatch.build(query, (await conn.execute(statement)).mappings().all())

    assert (await match("french", "no-such-config")).required == "( ( 'economiques' ) | ( 'french:econom' ) )"
    assert (await match()).required == "( ( 'economiques' ) )"


async def test_exact_tokens_in_any_language(engine: AsyncEngine) -> None:
    assert await search(engine, "hauser") == ["en-hauser", "de"]
    assert set(await search(engine, "econom")) == {"en-econom", "fr"}  # fr: French stem of économiques


async def test_phrases_keep_word_order_and_never_span_fields(engine: AsyncEngine) -> None:
    assert await search(engine, '"climate change"') == ["climate"]
    assert set(await search(engine, "climate change")) == {"climate", "climate-rev", "span"}


async def test_exclusions(engine: AsyncEngine) -> None:
    assert await search(engine, "climate -science") == ["span", "climate"]
    assert await search(engine, 'climate -"climate change"') == ["span", "climate-rev"]
    assert set(await search(engine, "-python -climate -change")) == {"fr", "en-econom", "de", "en-hauser", "empty"}


async def test_title_and_tag_matches_rank_above_body_text(engine: AsyncEngine) -> None:
    # Equal title/tag matches tie on rank and come newest first (py-title was saved 2025-03-01).
    # Same rank and time: the id decides (descending).
    assert await search(engine, "python") == ["py-title", "py-tag", "tie-b", "tie-a", "xss", "py-desc", "py-text",
                                              "py-notes"]  # fmt: skip


async def test_words_in_the_description_rank_between_title_and_tag_matches_and_the_rest(engine: AsyncEngine) -> None:
    # py-desc (description) is older than py-notes (notes) and py-text (page text), yet comes before both;
    # the middle tier needs every word as written at weight A or B: "reptiles snake" (title + description)
    # is in it, "zoo python" (title + notes) is not.
    assert await search(engine, "python") == ["py-title", "py-tag", "tie-b", "tie-a", "xss", "py-desc", "py-text",
                                              "py-notes"]  # fmt: skip
    assert await search(engine, "snake reptiles") == ["py-desc"]
    query = parse_query("snake reptiles")
    async with engine.connect() as conn:
        match = await text_match(conn, query)
        statement = search_page(query, match, COLUMNS, [probe.c.client_bookmark_id], owner=ALICE, after=None,
                                limit=20)  # fmt: skip
        (row,) = (await conn.execute(statement)).all()
    assert row.search_rank == MID_TIER
    assert match.fields == "( 'snake':AB ) & ( 'reptiles':AB )"
    async with engine.connect() as conn:
        phrase = await text_match(conn, parse_query('"climate change" o\'brien'))
    assert phrase.fields == "( 'o':AB <-> 'brien':AB ) & ( 'climate':AB <-> 'change':AB )"


async def test_deleted_rows_and_other_users_are_never_found(engine: AsyncEngine) -> None:
    assert "gone" not in await search(engine, "python deleted")
    assert "bob" not in await search(engine, "python")
    assert await search(engine, "python", owner=BOB) == ["bob"]


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("tag:python", {"py-tag"}),
        ('tag:"reading  LIST"', {"py-tag"}),
        ("tag:SCIENCE", {"climate-rev"}),
        ("domain:python.org", {"py-title", "py-tag"}),
        ("domain:https://www.docs.python.org:8443/x", {"py-title"}),
        ("collection:c1", {"climate"}),
        ("is:favorite", {"climate"}),
        ("is:archived", {"py-tag"}),
        ("is:enriched", {"fr", "de"}),
        ("is:failed", {"py-tag"}),
        ("is:pending", set(BY_ID) - {"fr", "de", "py-tag", "gone", "bob"}),
        ("after:2025-02-01", {"py-text", "py-title"}),
        ("before:2025-01-03", {"fr", "empty"}),
        ("domain:empty.example", {"empty"}),
        ("after:2025-01-04 before:2025-01-06", {"de", "en-hauser"}),
    ],
)
async def test_filters(engine: AsyncEngine, q: str, expected: set[str]) -> None:
    assert set(await search(engine, q)) == expected
    if " " not in q:
        assert set(await search(engine, f"-{q}")) == set(BY_ID) - {"gone", "bob"} - expected


async def test_negated_filters_keep_rows_where_the_field_is_empty(engine: AsyncEngine) -> None:
    assert set(await search(engine, "-collection:c1")) == set(BY_ID) - {"gone", "bob", "climate"}
    assert set(await search(engine, "-is:unread")) == {"py-tag"}


async def test_filter_only_queries_are_newest_first(engine: AsyncEngine) -> None:
    assert await search(engine, "domain:python.org") == ["py-title", "py-tag"]  # saved 2025-03 beats created 2025-01


async def test_words_and_filters_combine(engine: AsyncEngine) -> None:
    assert await search(engine, "python -is:archived domain:python.org") == ["py-title"]


async def test_pages_never_repeat_or_skip(engine: AsyncEngine) -> None:
    for q in ("python", "is:pending", "climate -tag:nothing", "tied"):
        expected = await search(engine, q)
        query = parse_query(q)
        seen: list[str] = []
        after = None
        async with engine.connect() as conn:
            match = await text_match(conn, query)
            while True:
                statement = search_page(query, match, COLUMNS, [], owner=ALICE, after=after, limit=2)
                page = (await conn.execute(statement)).all()
                seen += [row.search_id for row in page]
                if len(page) < 2:
                    break
                cursor = encode_search_cursor(position_of(page[-1]), query=query, owner=ALICE, secret="s")
                after = decode_search_cursor(cursor, query=query, owner=ALICE, secret="s")
        assert seen == expected


async def test_snippets_show_original_spelling_and_escape_markup(engine: AsyncEngine) -> None:
    query = parse_query("economique")
    title = BY_ID["xss"].document.title
    assert title is not None
    long_text = "Lorem ipsum dolor sit amet. " * 1000 + FRENCH_TEXT + " Lorem ipsum." * 1000
    window = snippet_window(long_text, query.words)
    async with engine.connect() as conn:
        french = await text_match(conn, query)
        python = await text_match(conn, parse_query("python"))
        texts = [FRENCH_TEXT, title, window]
        parameters = {
            "configs": ["french", "simple", "french"],
            "documents": [headline_document(t) for t in texts],
            "queries": [french.headline_query("french") or "", python.headline_query("simple") or "",
                        french.headline_query("french") or ""],
        }  # fmt: skip
        fr, xss, long = (await conn.execute(headlines_statement(), parameters)).scalars().all()
    assert "politiques <mark>ÉCONOMIQUES</mark> de la France sont débattues" in render_snippet(fr, FRENCH_TEXT)
    assert render_snippet(xss, title) == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; <mark>python</mark>"
    assert "<mark>ÉCONOMIQUES</mark>" in render_snippet(long, window)


@pytest.mark.parametrize(
    "q",
    [
        "a & b | !c <-> d* (e) :*",
        "'; drop table search_probe; --",
        "back\\slash \\\\ 'quote' \"it's\"",
        'tag:"o\'brien" collection:"%_\\\\" -tag:*',
        "domain:a_b.example",
        "word \x01\x7f \u200b \ufeff \ue000 \ue001",
        "résumé Ⅸ ß " + "x" * 200,
        "e-mail don't 3.14 1/2",
        " ".join(f"w{i}" for i in range(20)),
    ],
)
async def test_hostile_queries_run_without_database_errors(engine: AsyncEngine, q: str) -> None:
    assert isinstance(await search(engine, q), list)
    assert await search(engine, "python")  # the table is still there


async def test_tsqueries_are_computed_once_per_statement_not_per_row(engine: AsyncEngine) -> None:
    """Every tsquery is a constant of the statement: indexable by GIN, never recomputed row by row."""
    query = parse_query('economie "climate change" -crypto')
    async with engine.connect() as conn:
        match = await text_match(conn, query)
        statement = search_page(query, match, COLUMNS, [probe.c.client_bookmark_id], owner=ALICE, after=None,
                                limit=20)  # fmt: skip
        sql = str(statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        plan = "\n".join(row[0] for row in await conn.exec_driver_sql("EXPLAIN " + sql))
    # The tsqueries arrive as constants built from the stems looked up first: no tsquery function runs,
    # per row or at all, and the GIN index can use the constant.
    assert "phraseto_tsquery" not in plan and "to_tsquery(" not in plan
    assert "::tsquery" in plan


CAROL = uuid.UUID("cccccccc-0000-0000-0000-000000000003")


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("domain:python.org", {"py-title", "py-tag"}),
        ("domain:org", {"py-title", "py-text", "py-tag"}),
        ("python domain:python.org", {"py-title", "py-tag"}),
        ("python -domain:python.org", {"tie-a", "tie-b", "xss", "py-desc", "py-text", "py-notes"}),
    ],
)
async def test_domain_filters_match_the_host_and_its_subdomains_only(
    engine: AsyncEngine, q: str, expected: set[str]
) -> None:
    """The host and its subdomains (docs.python.org), never a longer name ending the same (notpython.org)."""
    assert set(await search(engine, q)) == expected


async def test_a_domain_filter_reads_ranges_of_the_reversed_domain_index(engine: AsyncEngine) -> None:
    """On a library of many domains, ``domain:`` is two ranges of the index on (owner, reversed domain), not
    a walk of the owner's rows (rolled back: the other tests keep their rows)."""
    async with engine.connect() as conn, conn.begin() as transaction:
        plain = {"search_vector": "", "search_head": "", "search_config": "simple"}
        rows = [_values(Row(f"c{i}", Doc(), owner=CAROL, domain=f"h{i % 500}.example.com")) | plain
                for i in range(5000)]  # fmt: skip
        await conn.execute(sa.insert(probe), rows)
        await conn.exec_driver_sql("ANALYZE search_probe")
        query = parse_query("domain:h7.example.com")
        statement = search_page(query, TextMatch(None, None), COLUMNS, [probe.c.client_bookmark_id], owner=CAROL,
                                after=None, limit=20)  # fmt: skip
        found = {row.client_bookmark_id for row in await conn.execute(statement)}
        sql = str(statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        plan = "\n".join(row[0] for row in await conn.exec_driver_sql("EXPLAIN " + sql))
        await transaction.rollback()
    assert found == {f"c{i}" for i in range(7, 5000, 500)}
    owner = "owner_uid = 'cccccccc-0000-0000-0000-000000000003'::uuid"
    assert f"Index Cond: (({owner}) AND ((reverse(domain))::text = 'moc.elpmaxe.7h'::text))" in plan, plan
    assert (
        "(reverse(domain))::text >= 'moc.elpmaxe.7h.'::text) AND ((reverse(domain))::text < 'moc.elpmaxe.7h/'" in plan
    )


DAVE = uuid.UUID("dddddddd-0000-0000-0000-000000000004")


def _dave_vector(i: int) -> str:
    own = f"'w{i}':1A"
    if i % 50 == 0:
        return own + " 'quokka':3B"  # in the description: the middle tier
    if i % 5 == 1:
        return own + " 'quokka':40C"  # in the page text only: the last tier
    return own


async def test_the_middle_tier_is_a_plain_read_of_the_index_of_the_a_and_b_lexemes(engine: AsyncEngine) -> None:
    """The middle tier's GIN read is the index of ``ts_filter(search_vector, '{a,b}')`` (as
    ix_bookmarks_search_ab): no weighted tsquery rechecks the rows whose page text holds the word. The same
    rows, newest first (rolled back: the other tests keep their rows)."""
    async with engine.connect() as conn, conn.begin() as transaction:
        start = day("2025-01-01")
        rows = [_values(Row(f"d{i}", Doc(), owner=DAVE, created=start + timedelta(minutes=i)))
                | {"search_vector": _dave_vector(i), "search_head": f"'w{i}':1A", "search_config": "simple"}
                for i in range(5000)]  # fmt: skip
        await conn.execute(sa.insert(probe), rows)
        await conn.exec_driver_sql("ANALYZE search_probe")
        await conn.execute(planner_settings(bitmap_only=True))  # as the service's GIN reads
        query = parse_query("quokka")
        match = await text_match(conn, query)
        statement = tier_page(query, match, COLUMNS, [probe.c.client_bookmark_id], owner=DAVE, tier=MID_TIER,
                              after=None, limit=20)  # fmt: skip
        found = [row.client_bookmark_id for row in await conn.execute(statement)]
        sql = str(statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        plan = "\n".join(row[0] for row in await conn.exec_driver_sql("EXPLAIN " + sql))
        await transaction.rollback()
    assert found == [f"d{i}" for i in range(4950, -1, -50)][:20]
    assert match.ab_fields == "( 'quokka' )"
    assert "Bitmap Index Scan on ix_search_probe_ab" in plan, plan
    assert "Index Cond: (ts_filter(search_vector, '{a,b}'::\"char\"[]) @@ '''quokka'''::tsquery)" in plan, plan
    assert ":AB" not in plan, plan


async def test_a_word_s_other_vector_tests_run_only_on_the_rows_its_filters_keep(engine: AsyncEngine) -> None:
    """A GIN read fetches every row holding the word. Its other tests read the row's whole vector (not in
    the title, not in the fields: a toasted page's vector for some), so they come after the query's
    filters in a ``CASE``, which PostgreSQL evaluates in its order: a ``domain:`` keeping few of those rows
    saves reading most vectors. The filters also stay conditions of their own."""
    query = parse_query("quokka -wombat domain:h7.example.com")
    async with engine.connect() as conn:
        match = await text_match(conn, query)
        statement = tier_page(query, match, COLUMNS, [probe.c.client_bookmark_id], owner=DAVE, tier=BODY_TIER,
                              after=None, limit=20)  # fmt: skip
        sql = str(statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        plan = "\n".join(row[0] for row in await conn.exec_driver_sql("EXPLAIN " + sql))
    conditions = next(line for line in plan.splitlines() if "CASE WHEN" in line)
    guarded = conditions[conditions.index("CASE WHEN") :]
    tests = [guarded.index(t) for t in ("search_vector @@ '''wombat", "search_head @@", "quokka'':AB")]
    assert guarded.index("domain") < guarded.index(" THEN ") < min(tests), plan
    assert "(domain = 'h7.example.com'::text)" in conditions[: conditions.index("CASE WHEN")], plan
