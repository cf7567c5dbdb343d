"""GET /v1/bookmarks/search (docs/api-guide.md, section 12) through the service on the real PostgreSQL and broker."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from common.events import EnrichmentCompleted, EnrichmentResult, UserDeleted, UserMerged
from devstack.testing import eventually

FRENCH = (
    "Les politiques ÉCONOMIQUES de la France sont débattues au Parlement depuis des années. "
    "Les élèves étudient l'économie."
)
GERMAN = "Die Häuser und Straßen von Berlin wurden nach dem Krieg wieder aufgebaut."
ENGLISH = "Gardening in small spaces: containers, herbs and tomatoes on the balcony."


async def put(http: httpx.AsyncClient, user: Any, bookmark_id: str, **fields: Any) -> dict[str, Any]:
    body = {"url": f"https://example.com/{bookmark_id}"} | fields
    response = await http.put(f"/v1/bookmarks/{bookmark_id}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def search_raw(http: httpx.AsyncClient, user: Any, q: str | None, **params: Any) -> httpx.Response:
    query = ({"q": q} if q is not None else {}) | {k: str(v) for k, v in params.items()}
    return await http.get("/v1/bookmarks/search", params=query, headers=user.headers)


async def search(http: httpx.AsyncClient, user: Any, q: str, **params: Any) -> list[dict[str, Any]]:
    response = await search_raw(http, user, q, **params)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["data"]["results"]
    return results


async def ids(http: httpx.AsyncClient, user: Any, q: str) -> list[str]:
    """Every result id of ``q``, following the cursor to the end (page size 3)."""
    found: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        response = await search_raw(http, user, q, **params)
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        found += [r["bookmark"]["clientBookmarkId"] for r in data["results"]]
        cursor = data["nextCursor"]
        if cursor is None:
            return found


def enriched(user: Any, bookmark_id: str, page_text: str, language: str | None, **result: Any) -> EnrichmentCompleted:
    url = f"https://example.com/{bookmark_id}"
    values = {"normalizedUrl": url, "domain": "example.com", "text": page_text, "language": language} | result
    return EnrichmentCompleted(
        userId=user.id, clientBookmarkId=bookmark_id, normalizedUrl=url, result=EnrichmentResult(**values)
    )


Publish = Callable[[Any], Awaitable[None]]


async def enrich(
    http: httpx.AsyncClient,
    publish: Publish,
    user: Any,
    bookmark_id: str,
    page_text: str,
    language: str | None,
    **result: Any,
) -> None:
    """Publish an enrichment result and wait until delta shows it."""
    await publish(enriched(user, bookmark_id, page_text, language, **result))

    async def visible() -> bool:
        response = await http.get("/v1/bookmarks/delta", params={"limit": "1000"}, headers=user.headers)
        records = response.json()["data"]["upserts"]
        return any(r["clientBookmarkId"] == bookmark_id and r["enrichmentStatus"] == "completed" for r in records)

    await eventually(visible)


@pytest.fixture(scope="module")
async def library(http: httpx.AsyncClient, module_user: Any, publish: Publish) -> Any:
    """The module's library, built once (each build waits for three enrichments through the broker): the
    tests given it only search it. A test that changes a library builds its own with :func:`build_library`."""
    return await build_library(http, module_user, publish)


async def build_library(http: httpx.AsyncClient, user: Any, publish: Publish) -> Any:
    """A small library: French and German pages (enriched), titles, tags, states, dates."""
    await http.put("/v1/collections/reading", json={"name": "Reading"}, headers=user.headers)
    await put(http, user, "fr", title="Budget 2025", clientSavedAt="2025-01-02T10:00:00Z")
    await put(http, user, "de", title="Wohnen", clientSavedAt="2025-01-04T10:00:00Z")
    await put(http, user, "en-garden", title="Balcony ideas", clientSavedAt="2025-01-05T10:00:00Z")
    await put(
        http,
        user,
        "climate",
        url="https://news.example.org/c",
        title="Climate change now",
        notes="why it matters",
        isFavorite=True,
        collectionIds=["reading"],
        clientSavedAt="2025-01-06T10:00:00Z",
        lastOpenedAt="2025-01-07T10:00:00Z",
    )
    await put(
        http, user, "climate-rev", title="Change of climate", userTags=["Science"], clientSavedAt="2025-01-07T10:00:00Z"
    )
    await put(
        http,
        user,
        "py-title",
        url="https://docs.python.org/3/",
        title="Python tips",
        clientSavedAt="2025-03-01T10:00:00Z",
    )
    await put(http, user, "py-notes", title="Misc", notes="python snakes python", clientSavedAt="2025-02-01T10:00:00Z")
    await put(
        http,
        user,
        "py-tag",
        url="https://python.org/x",
        title="Snakes",
        userTags=["Python", "Café"],
        isArchived=True,
        clientSavedAt="2025-01-20T10:00:00Z",
    )
    await put(http, user, "xss", title='<script>alert("x")</script> python', clientSavedAt="2025-01-10T10:00:00Z")
    await enrich(http, publish, user, "fr", FRENCH, "fr", title=None)
    await enrich(http, publish, user, "de", GERMAN, "de", title=None)
    await enrich(http, publish, user, "en-garden", ENGLISH, "en", title=None)
    return user


async def test_words_must_all_match_case_and_accents_do_not_matter(http: httpx.AsyncClient, library: Any) -> None:
    assert await ids(http, library, "CLIMATE") == ["climate-rev", "climate"]
    assert await ids(http, library, "climate matters") == ["climate"]
    assert await ids(http, library, "cafe") == ["py-tag"]
    assert await ids(http, library, "ÉCONOMIQUES") == ["fr"]


async def test_french_stemming_on_a_french_page_after_accent_folding(http: httpx.AsyncClient, library: Any) -> None:
    assert await ids(http, library, "economique") == ["fr"]
    assert await ids(http, library, "eleve parlements") == ["fr"]


async def test_german_stemming_on_a_german_page(http: httpx.AsyncClient, library: Any) -> None:
    assert await ids(http, library, "haus strasse") == ["de"]
    assert await ids(http, library, "Hauser") == ["de"]


async def test_stems_only_in_the_pages_language(http: httpx.AsyncClient, library: Any) -> None:
    # "tomato" is English's stem of "tomatoes" on the English page; German stems do not reach it.
    assert await ids(http, library, "tomato") == ["en-garden"]
    assert await ids(http, library, "haus") == ["de"]


async def test_phrases_keep_word_order(http: httpx.AsyncClient, library: Any) -> None:
    assert await ids(http, library, '"climate change"') == ["climate"]
    assert await ids(http, library, '"change climate"') == []


async def test_exclusions_of_words_and_phrases(http: httpx.AsyncClient, library: Any) -> None:
    assert await ids(http, library, "climate -science") == ["climate"]
    assert await ids(http, library, 'climate -"climate change"') == ["climate-rev"]


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("tag:python", {"py-tag"}),
        ("tag:CAFE", {"py-tag"}),
        ("domain:python.org", {"py-title", "py-tag"}),
        ("domain:example.org", {"climate"}),
        ("collection:reading", {"climate"}),
        ("is:favorite", {"climate"}),
        ("is:archived", {"py-tag"}),
        ("is:enriched", {"fr", "de", "en-garden"}),
        ("after:2025-02-01", {"py-notes", "py-title"}),
        ("before:2025-01-04", {"fr"}),
    ],
)
async def test_filters_and_their_negation(http: httpx.AsyncClient, library: Any, q: str, expected: set[str]) -> None:
    everything = set(await ids(http, library, "-is:failed"))
    assert len(everything) == 9
    assert set(await ids(http, library, q)) == expected
    assert set(await ids(http, library, f"-{q}")) == everything - expected


async def test_unread_pending_and_failed(http: httpx.AsyncClient, library: Any) -> None:
    assert set(await ids(http, library, "-is:unread")) == {"climate"}
    assert "fr" not in await ids(http, library, "is:pending")
    assert "xss" in await ids(http, library, "is:pending")
    assert await ids(http, library, "is:failed") == []


async def test_filter_only_queries_are_newest_first_without_snippets(http: httpx.AsyncClient, library: Any) -> None:
    assert await ids(http, library, "domain:python.org") == ["py-title", "py-tag"]
    assert all(r["snippet"] is None for r in await search(http, library, "is:unread"))


async def test_title_and_tag_matches_rank_above_notes_then_newest_first(http: httpx.AsyncClient, library: Any) -> None:
    assert await ids(http, library, "python") == ["py-title", "py-tag", "xss", "py-notes"]


async def test_snippets_mark_matches_and_escape_everything_else(http: httpx.AsyncClient, library: Any) -> None:
    [xss] = await search(http, library, "alert")
    assert xss["snippet"] == "&lt;script&gt;<mark>alert</mark>(&quot;x&quot;)&lt;/script&gt; python"
    assert xss["bookmark"]["title"] == '<script>alert("x")</script> python'  # the Bookmark as delta shows it
    [fr] = await search(http, library, "economique")
    assert "<mark>ÉCONOMIQUES</mark>" in fr["snippet"] and len(fr["snippet"]) <= 300


async def test_pages_never_repeat_or_skip(http: httpx.AsyncClient, library: Any) -> None:
    for q in ("python", "-is:failed", "climate -tag:nothing"):
        every = await search(http, library, q, limit=100)
        assert await ids(http, library, q) == [r["bookmark"]["clientBookmarkId"] for r in every]


@pytest.mark.parametrize("window", [0, 1_000_000], ids=["from-the-gin-index", "bounded-walk"])
async def test_both_reads_of_a_tier_give_the_same_pages(
    http: httpx.AsyncClient, library: Any, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """A tier is read first among the owner's newest rows and, when those do not hold its part of the page,
    from the GIN index (search/queries.py). A window of 0 always takes the second read; one larger
    than the library always the first. Same results either way, page by page (pages of 3 cross from the
    top tier into the body tier through the cursor)."""
    from bookmarks.search import queries as search_queries

    monkeypatch.setattr(search_queries, "WINDOWS", dict.fromkeys(search_queries.WINDOWS, window))
    assert await ids(http, library, "python") == ["py-title", "py-tag", "xss", "py-notes"]
    assert await ids(http, library, "climate -is:favorite") == ["climate-rev"]
    assert await ids(http, library, "zzzunknownword") == []
    # A domain: filter alone is read the same way (its index, ix_bookmarks_live_domain).
    assert await ids(http, library, "domain:python.org") == ["py-title", "py-tag"]
    assert await ids(http, library, "domain:python.org -is:archived") == ["py-title"]
    for q in ("python", "climate"):
        every = await search(http, library, q, limit=100)
        assert await ids(http, library, q) == [r["bookmark"]["clientBookmarkId"] for r in every]


async def test_the_body_tier_is_read_from_the_gin_index_only_when_the_ranked_tiers_leave_the_page_short(
    http: httpx.AsyncClient, library: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its GIN read is the costly one (every row holding the words, page text included)."""
    from bookmarks.search import queries as search_queries
    from bookmarks.search.sql import BODY_TIER, MID_TIER, TOP_TIER

    monkeypatch.setattr(search_queries, "WINDOWS", dict.fromkeys(search_queries.WINDOWS, 0))
    read: list[float | None] = []
    statement_of = search_queries._statement

    def recording(*args: Any, **kwargs: Any) -> Any:
        read.extend(tier for tier, _, _ in args[3])
        return statement_of(*args, **kwargs)

    monkeypatch.setattr(search_queries, "_statement", recording)
    page = await search(http, library, "python", limit=2)  # the title tier alone holds 3 (a page and one)
    assert [r["bookmark"]["clientBookmarkId"] for r in page] == ["py-title", "py-tag"]
    assert read == [TOP_TIER, MID_TIER]
    read.clear()
    page = await search(http, library, "python", limit=100)
    assert [r["bookmark"]["clientBookmarkId"] for r in page] == ["py-title", "py-tag", "xss", "py-notes"]
    assert read == [TOP_TIER, MID_TIER, BODY_TIER]


@pytest.mark.parametrize("window", [0, 1_000_000], ids=["from-the-gin-index", "bounded-walk"])
async def test_the_body_tier_leaves_out_the_middle_tier_by_its_ids_or_by_its_test(
    http: httpx.AsyncClient, user: Any, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """Read from the GIN index, a page that read the whole middle tier leaves its rows out of the body tier
    by their ids; a page that starts inside the middle tier (a cursor) by the weighted test. Every row
    once, in tier order, whichever way and page size."""
    from bookmarks.search import queries as search_queries

    monkeypatch.setattr(search_queries, "WINDOWS", dict.fromkeys(search_queries.WINDOWS, window))
    await put(http, user, "q-notes", title="Misc", notes="a quokka", clientSavedAt="2025-03-01T10:00:00Z")
    await put(http, user, "q-desc", title="Island", description="quokka smiles", clientSavedAt="2025-02-01T10:00:00Z")
    await put(http, user, "q-desc-2", title="Rottnest", description="the quokka", clientSavedAt="2025-01-01T10:00:00Z")
    await put(http, user, "q-title", title="Quokka facts", clientSavedAt="2024-01-01T10:00:00Z")
    expected = ["q-title", "q-desc", "q-desc-2", "q-notes"]
    assert [r["bookmark"]["clientBookmarkId"] for r in await search(http, user, "quokka", limit=100)] == expected
    assert await ids(http, user, "quokka") == expected  # the second page starts in the middle tier


async def test_a_search_plans_every_statement_for_its_values_and_never_reads_the_table_whole(
    large_library: Any,
) -> None:
    """The page's first statement sets both for the rest of its transaction (``search_plans``): a window
    read with a filter of few estimated matches was otherwise planned as a parallel sequential scan."""
    from bookmarks.search import queries as search_queries
    from bookmarks.search.query import parse_query

    async with large_library.engine.connect() as conn:
        await search_queries.context(conn, parse_query("big domain:big.example"), large_library.owner)
        found = await conn.execute(text("SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')"))
        assert tuple(found.one()) == ("force_custom_plan", "off")
        await conn.rollback()
        found = await conn.execute(text("SELECT current_setting('enable_seqscan')"))
        assert found.scalar() == "on"  # the transaction's own: the next one starts from the defaults


async def test_a_statement_built_for_one_query_serves_every_query_of_its_shape_with_their_own_values(
    http: httpx.AsyncClient, library: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Search statements are built once per shape (search/queries.py): each query, paged by 3, gives
    with statements built for other queries what it gives with its own."""
    from sqlalchemy.util import LRUCache

    from bookmarks.search import queries as search_queries

    built: list[str] = []
    reads_statement = search_queries.reads_statement
    monkeypatch.setattr(
        search_queries, "reads_statement", lambda *a, **k: built.append("statement") or reads_statement(*a, **k)
    )
    queries = ["python", "climate", "snakes", "climate -is:favorite", "domain:python.org", "domain:example.org",
               "python -tag:café", "tag:science", "-is:archived", "zzzunknownword"]  # fmt: skip
    alone = {}
    for q in queries:  # each with statements of its own
        monkeypatch.setattr(search_queries, "_STATEMENTS", LRUCache(128))
        alone[q] = await ids(http, library, q)
    assert alone["python"] == ["py-title", "py-tag", "xss", "py-notes"]
    monkeypatch.setattr(search_queries, "_STATEMENTS", LRUCache(128))
    for q in queries:
        assert await ids(http, library, q) == alone[q], q
    built.clear()
    for q in reversed(queries):
        assert await ids(http, library, q) == alone[q], q
    assert built == []  # every statement of the second round was one built in the first


async def test_cursor_tampering_and_reuse_with_another_query_are_refused(
    http: httpx.AsyncClient, library: Any, make_user: Any
) -> None:
    first = (await search_raw(http, library, "python", limit=1)).json()["data"]
    cursor = first["nextCursor"]
    assert cursor
    assert (await search_raw(http, library, "PYTHON", limit=1, cursor=cursor)).status_code == 200
    for q, bad in (
        ("snakes", cursor),
        ("python", cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]),
        ("python", "garbage"),
    ):
        response = await search_raw(http, library, q, cursor=bad)
        assert response.status_code == 400 and response.json()["code"] == "invalid-cursor", (q, bad)
    other = make_user()
    response = await search_raw(http, other, "python", cursor=cursor)
    assert response.status_code == 400 and response.json()["code"] == "invalid-cursor"


@pytest.mark.parametrize("q", [None, "", "   ", "colour:red", "is:starred", "after:2025-13-01", '"open quote'])
async def test_bad_queries_are_400_invalid_request(http: httpx.AsyncClient, user: Any, q: str | None) -> None:
    response = await search_raw(http, user, q)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid-request"


async def test_limit_out_of_range_is_400(http: httpx.AsyncClient, user: Any) -> None:
    for limit in (0, 101, "x"):
        response = await search_raw(http, user, "python", limit=limit)
        assert response.status_code == 400, response.text


async def test_only_the_callers_live_bookmarks(
    http: httpx.AsyncClient, user: Any, publish: Publish, make_user: Any
) -> None:
    library = await build_library(http, user, publish)  # its own: this test deletes from it
    other = make_user()
    await put(http, other, "theirs", title="Python of someone else")
    assert "theirs" not in await ids(http, library, "python")
    assert await ids(http, other, "python") == ["theirs"]
    await http.delete("/v1/bookmarks/py-title", headers=library.headers)
    assert "py-title" not in await ids(http, library, "python")
    assert "py-title" not in await ids(http, library, "domain:python.org")


async def test_a_put_is_searchable_as_soon_as_it_returns(http: httpx.AsyncClient, user: Any, publish: Publish) -> None:
    await put(http, user, "fresh", title="Quokka photography")
    assert await ids(http, user, "quokka") == ["fresh"]
    await put(http, user, "fresh", title="Wombat photography")
    assert await ids(http, user, "quokka") == []
    assert await ids(http, user, "wombat") == ["fresh"]


async def test_page_text_is_searchable_once_enrichment_is_visible_and_survives_later_puts(
    http: httpx.AsyncClient, user: Any, publish: Publish
) -> None:
    await put(http, user, "page", title="Some article")
    assert await ids(http, user, "aufgebaut") == []
    await enrich(http, publish, user, "page", GERMAN, "de", title=None)
    assert await ids(http, user, "aufgebaut") == ["page"]
    await put(http, user, "page", title="Renamed article", notes="mine")
    assert await ids(http, user, "haus renamed") == ["page"]  # page text and German stems kept
    # Phrases of the page and of the new fields; none spans the notes and the page.
    assert await ids(http, user, '"wieder aufgebaut"') == ["page"]
    assert await ids(http, user, '"renamed article"') == ["page"]
    assert await ids(http, user, '"aufgebaut wieder"') == []
    assert await ids(http, user, '"mine die"') == []


async def _search_rows(bookmarks_app: Any, owner: uuid.UUID) -> int:
    async with bookmarks_app.state.sessions() as session:
        found = await session.execute(
            text(
                "SELECT count(*) FROM bookmarks WHERE owner_uid = :o AND (search_vector <> '' "
                "OR search_page_text IS NOT NULL OR search_tags <> '{}')"
            ),
            {"o": owner},
        )
        return int(found.scalar_one())


async def test_account_deletion_and_merge_leave_no_search_data(
    http: httpx.AsyncClient, make_user: Any, publish: Publish, bookmarks_app: Any
) -> None:
    gone, anon, owner = make_user(), make_user(), make_user()
    await put(http, gone, "g", title="Searchable", userTags=["x"])
    await put(http, anon, "a", title="Anonymous notes")
    await enrich(http, publish, anon, "a", GERMAN, "de", title=None)
    assert await _search_rows(bookmarks_app, gone.id) == 1

    await publish(UserDeleted(userId=gone.id))
    await publish(UserMerged(userId=owner.id, sourceUserId=anon.id))

    async def done() -> bool:
        return await _search_rows(bookmarks_app, gone.id) == 0 and await _search_rows(bookmarks_app, anon.id) == 0

    await eventually(done)
    assert await ids(http, owner, "aufgebaut anonymous") == ["a"]  # the merged bookmark keeps its page text
    assert await ids(http, owner, "haus") == ["a"]  # and its German stems ("Häuser"): German is the owner's now


async def test_deleted_bookmarks_keep_no_search_data(http: httpx.AsyncClient, user: Any, bookmarks_app: Any) -> None:
    await put(http, user, "d", title="Ephemeral", userTags=["t"])
    await http.delete("/v1/bookmarks/d", headers=user.headers)
    assert await _search_rows(bookmarks_app, user.id) == 0


async def test_put_on_the_id_search_is_a_bookmark(http: httpx.AsyncClient, user: Any) -> None:
    data = await put(http, user, "search", title="Named search")
    assert data["clientBookmarkId"] == "search"
    assert await ids(http, user, "named") == ["search"]


def _hangul_words(count: int, first: int) -> str:
    """``count`` characters of three-syllable Hangul words, word ``first`` and the ones after it, each
    different (so no two parts of a vector share a lexeme). Folding splits every syllable into three
    letters, so the indexed text is about three times the characters kept."""
    words = [
        chr(0xAC01 + (n * 28) % 11172) + chr(0xAC01 + (n // 399 * 28 + 1) % 11172) + chr(0xAC02 + n % 27)
        for n in range(first, first + count // 4 + 1)
    ]
    return " ".join(words)[:count]


async def test_texts_that_together_pass_what_one_index_value_holds_are_saved_and_stay_searchable(
    http: httpx.AsyncClient, user: Any, publish: Publish
) -> None:
    """A page text and highlights within their limits can together index more than PostgreSQL keeps in
    one search vector (1 MB). Every write still succeeds: the page text's part is left out of the
    vector (then the highlights'), and the bookmark is found by its own fields and its highlights."""
    notes = {"description": _hangul_words(10_000, 0), "notes": _hangul_words(10_000, 3_000)}
    await put(http, user, "wide", title="Tidepool atlas", **notes)
    await enrich(http, publish, user, "wide", "seaweed " + _hangul_words(32_000, 6_000), "en", title=None)
    assert await ids(http, user, "seaweed") == ["wide"]
    for number in range(7):  # 35,000 characters: the index keeps the first 32,000
        quote = f"barnacle{number} " + _hangul_words(4_980, 20_000 + number * 1_300)
        body = {"bookmarkId": "wide", "quote": quote}
        response = await http.put(f"/v1/highlights/h{number}", json=body, headers=user.headers)
        assert response.status_code == 200, response.text
    await put(http, user, "wide", title="Tidepool atlas, revised", **notes)
    assert await ids(http, user, "revised barnacle0") == ["wide"]
    assert await ids(http, user, "seaweed") == []  # the page's part did not fit beside the rest
    # The other order: the enrichment result comes last, and is applied.
    await put(http, user, "wide-2", title="Rock pool atlas", **notes)
    for number in range(7):
        quote = f"limpet{number} " + _hangul_words(4_980, 20_000 + number * 1_300)
        body = {"bookmarkId": "wide-2", "quote": quote}
        response = await http.put(f"/v1/highlights/k{number}", json=body, headers=user.headers)
        assert response.status_code == 200, response.text
    await enrich(http, publish, user, "wide-2", "kelp " + _hangul_words(32_000, 6_000), "en", title=None)
    assert await ids(http, user, "rock limpet6") == ["wide-2"]
    assert await ids(http, user, "kelp") == []
