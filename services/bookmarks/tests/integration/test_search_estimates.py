"""A page reads a tier from its window only when the window is expected to fill (search/estimates.py,
docs/decisions/0160-windows-where-they-fill.md), on a database of its own that ANALYZE has seen; and a
tier below a full one in the same statement is never read."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from bookmarks.domain.model import Bookmark
from bookmarks.search import estimates, queries, service
from bookmarks.search.query import parse_query
from bookmarks.search.sql import MID_TIER, TOP_TIER, planner_settings, reads_statement
from bookmarks.store.rows import put_parameters, put_statement

OWNER = uuid.uuid4()
SAVED = datetime(2026, 1, 1, tzinfo=UTC)
ROWS = 3_000


def record(n: int) -> Bookmark:
    # "common" in every third title; "middling" in the description of every hundredth row (1 % of the
    # table: 10 in a window of 1,000); "zebra" in three titles; "walrus" in 30 titles and 400 descriptions.
    title = " ".join(["common"] * (n % 3 == 0) + ["zebra"] * (n in (5, 1_500, 2_999)) + ["walrus"] * (n < 30)
                     + [f"item{n}"])  # fmt: skip
    # Domains: mid.example on every fiftieth row (2 %), rare.example on three, e.example on the rest.
    description = " ".join(["middling"] * (n % 100 == 0) + ["walrus"] * (30 <= n < 430) + ["text"])
    when = SAVED + timedelta(minutes=n)
    domain = "mid.example" if n % 50 == 0 else "rare.example" if n in (7, 1_234, 2_900) else "e.example"
    return Bookmark(owner_uid=OWNER, client_bookmark_id=f"bm-{n:05}", url=f"https://{domain}/{n}",
                    normalized_url=f"https://{domain}/{n}", domain=domain, created_at=when, updated_at=when,
                    client_saved_at=when, title=title, description=description)  # fmt: skip


@dataclass
class Library:
    engine: AsyncEngine
    statements: list[str]


@pytest.fixture(scope="module")
async def analyzed(infra: Any) -> AsyncIterator[Library]:
    engine = create_async_engine(infra.fresh_database("bookmarks"))
    async with engine.begin() as conn:
        await conn.execute(put_statement(False), [put_parameters(record(n)) for n in range(ROWS)])
        await conn.execute(sa.text("ANALYZE bookmarks"))
    library = Library(engine, [])

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def keep(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        library.statements.append(statement)

    estimates.forget_counts()
    yield library
    await engine.dispose()


async def page_ids(library: Library, q: str) -> list[str]:
    sessions = async_sessionmaker(library.engine, expire_on_commit=False)
    library.statements.clear()
    page = await service.search(sessions=sessions, owner=OWNER, q=q, limit=20, cursor=None, cursor_secret="s" * 32)
    return [r.record.client_bookmark_id for r in page.results]


def windows(library: Library) -> int:
    """How many window reads the last page ran (a window's boundary is the owner's n-th newest row)."""
    return sum(statement.count("OFFSET") for statement in library.statements)


def reads(library: Library) -> int:
    """How many statements of the last page read the bookmarks table."""
    return sum("FROM bookmarks" in statement for statement in library.statements)


async def test_the_statistics_of_every_tier_s_vector_are_read(analyzed: Library) -> None:
    async with analyzed.engine.connect() as conn:
        counts = await estimates.tier_counts(conn)
    assert set(counts.tiers) == {TOP_TIER, MID_TIER, 0.0}
    top = counts.tiers[TOP_TIER]
    assert top.rows == ROWS and top.rows_of("common") == pytest.approx(1_000, rel=0.2)
    assert top.rows_of("zebra") == pytest.approx(3, abs=1) and top.rows_of("absent") == top.floor * ROWS
    assert counts.domains is not None and counts.domains.share_of("mid.example") == pytest.approx(0.02)
    assert counts.domains.share_of("example") == pytest.approx(1)  # every kept domain is a subdomain


@pytest.mark.parametrize(
    ("q", "walked"),
    # "common": the title tier's window is expected to hold several pages, the only window walked.
    [("zebra", 0), ("middling", 0), ("zebra walrus", 0), ('"common item33"', 0), ("common", 1)],
)
async def test_a_tier_is_walked_only_when_its_window_is_expected_to_fill(
    analyzed: Library, monkeypatch: pytest.MonkeyPatch, q: str, walked: int
) -> None:
    found = await page_ids(analyzed, q)
    assert found and windows(analyzed) == walked, q
    monkeypatch.setattr(estimates, "window_matches", lambda *args, **kwargs: None)  # as without statistics
    assert await page_ids(analyzed, q) == found  # the same page as with every window walked
    assert windows(analyzed) >= 2


@pytest.mark.parametrize(
    ("q", "walked"),
    # mid.example: 2 % of the rows, ~2,100 of the newest hold two pages; rare.example: its index at once.
    [("domain:mid.example", 1), ("domain:rare.example", 0), ("domain:e.example", 1)],
)
async def test_a_domain_filter_walks_a_window_sized_to_its_share_or_reads_its_index_at_once(
    analyzed: Library, monkeypatch: pytest.MonkeyPatch, q: str, walked: int
) -> None:
    found = await page_ids(analyzed, q)
    assert found and windows(analyzed) == walked, q
    if q == "domain:mid.example":
        assert len(found) == 20 and reads(analyzed) == 1  # the window alone held the page
    monkeypatch.setattr(estimates, "domain_window", lambda *args, **kwargs: None)  # as without statistics
    assert await page_ids(analyzed, q) == found  # the same page as with the body tier's window
    assert windows(analyzed) == 1


async def test_a_tier_below_a_full_one_in_the_same_statement_is_never_read(analyzed: Library) -> None:
    """ "walrus": 30 titles fill the top tier's page; its 400 descriptions are the middle tier's rows."""
    query = parse_query("walrus")
    async with analyzed.engine.connect() as conn:
        match, _ = await queries.context(conn, query, OWNER)
        reads = [(TOP_TIER, None, None), (MID_TIER, None, None)]
        statement = reads_statement(query, match, queries.COLUMNS, queries._SELECTED, owner=OWNER, reads=reads,
                                    limit=21)  # fmt: skip
        compiled = statement.compile(dialect=analyzed.engine.dialect, compile_kwargs={"render_postcompile": True})
        await conn.execute(planner_settings(bitmap_only=True))  # as the page does before its GIN reads
        raw = (await conn.get_raw_connection()).driver_connection
        assert raw is not None
        parameters = compiled.construct_params()
        positional = [parameters[name] for name in compiled.positiontup or []]
        plan = "\n".join(r[0] for r in await raw.fetch("EXPLAIN (ANALYZE, COSTS OFF) " + compiled.string, *positional))
        await conn.rollback()
    lines = plan.splitlines()
    gate = next(i for i, line in enumerate(lines) if "One-Time Filter" in line)  # the middle tier's condition
    middle = [line for line in lines[gate:] if "Scan" in line]
    assert middle and all("never executed" in line for line in middle), plan
    assert await page_ids(analyzed, "walrus") == [f"bm-{n:05}" for n in range(29, 8, -1)][:20]
