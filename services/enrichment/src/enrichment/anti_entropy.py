"""Anti-entropy of enrichment's projections (docs/decisions/0131-anti-entropy.md): the loop, the sources'
internal routes, and the bookmark-URL check (the users check is in ``anti_entropy_users``).

Every ANTI_ENTROPY_INTERVAL_SECONDS one replica (an advisory lock decides which) runs each check. The
bookmark-URL check walks the bookmarks service's users a page at a time, compares digests of their live
bookmarks with the projection's, drills differing buckets down to ids, and asks bookmarks to re-publish
those ids through its outbox. The events then repair the projection the normal way: nothing here writes
another service's data, and the only write to our own is marking the differing rows' positions unknown so
the re-published state is applied.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import httpx
from pydantic import BaseModel, ValidationError
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from common import anti_entropy as ae
from common.db import SessionFactory, transaction
from common.metrics import (
    ANTI_ENTROPY_CHECKS,
    ANTI_ENTROPY_LAST_COMPLETED,
    ANTI_ENTROPY_REPAIRED,
    initialise_anti_entropy_series,
)
from common.tracing import inject_http_headers
from enrichment.store import digests

log = logging.getLogger("enrichment.anti_entropy")

SERVICE, PROJECTION = "enrichment", "bookmark_urls"
# Arbitrary constant: one advisory-lock id for "the anti-entropy pass of this database".
LOCK_ID = 7_311_500_131
# A user whose projection lost more than this many records is repaired over several passes.
MAX_REPAIRS_PER_USER = 10 * ae.MAX_IDS_PER_REQUEST

_Answer = TypeVar("_Answer", bound=BaseModel)


class SourceUnavailable(Exception):
    """The source did not answer, or not as agreed: that check ends and the next pass starts over."""


class _InternalSource:
    """A service's internal anti-entropy routes (never reachable through the gateway), with a deadline."""

    def __init__(self, *, base_url: str, timeout_seconds: float, http: httpx.AsyncClient | None = None) -> None:
        self.base_url = base_url
        self._http = http or httpx.AsyncClient(timeout=timeout_seconds, trust_env=False)
        self._owns_http = http is None

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def _post(self, path: str, body: BaseModel, answer: type[_Answer]) -> _Answer:
        headers = {"content-type": "application/json"}
        inject_http_headers(headers)
        url = self.base_url + path
        try:
            response = await self._http.post(url, content=body.model_dump_json(), headers=headers)
        except httpx.HTTPError as exc:
            raise SourceUnavailable(f"{url}: {exc or type(exc).__name__}") from exc
        if response.status_code != 200:
            raise SourceUnavailable(f"{url} answered {response.status_code}")
        try:
            return answer.model_validate_json(response.content)
        except ValidationError as exc:
            raise SourceUnavailable(f"{url} answered malformed JSON") from exc


class BookmarksSource(_InternalSource):
    """Bookmarks' digests of users' live bookmarks (id → normalized URL), and their re-publishing."""

    def __init__(self, *, bookmarks_url: str, timeout_seconds: float, http: httpx.AsyncClient | None = None) -> None:
        base_url = bookmarks_url.rstrip("/") + "/internal/anti-entropy/bookmark-urls"
        super().__init__(base_url=base_url, timeout_seconds=timeout_seconds, http=http)

    async def digests(self, *, after: uuid.UUID | None, limit: int) -> ae.DigestPage:
        return await self._post("/digests", ae.DigestRequest(after=after, limit=limit), ae.DigestPage)

    async def records(self, *, user: uuid.UUID, buckets: Sequence[int], settle_seconds: float) -> ae.RecordHashes:
        body = ae.RecordsRequest(userId=user, buckets=list(buckets), settleSeconds=settle_seconds)
        return await self._post("/records", body, ae.RecordHashes)

    async def republish(self, *, user: uuid.UUID, ids: Sequence[str]) -> int:
        answer = await self._post("/republish", ae.RepublishRequest(userId=user, ids=list(ids)), ae.Republished)
        return answer.republished


class AuthSource(_InternalSource):
    """Auth's digests of ranges of users (consent and plan), and their re-publishing as ``user.updated``."""

    def __init__(self, *, auth_url: str, timeout_seconds: float, http: httpx.AsyncClient | None = None) -> None:
        base_url = auth_url.rstrip("/") + "/internal/anti-entropy/users"
        super().__init__(base_url=base_url, timeout_seconds=timeout_seconds, http=http)

    async def digest(self, *, after: uuid.UUID | None, limit: int) -> ae.RangeDigest:
        return await self._post("/digest", ae.RangeRequest(after=after, limit=limit), ae.RangeDigest)

    async def records(
        self, *, after: uuid.UUID | None, up_to: uuid.UUID | None, settle_seconds: float
    ) -> ae.RecordHashes:
        body = ae.RangeRecordsRequest(after=after, upTo=up_to, settleSeconds=settle_seconds)
        return await self._post("/records", body, ae.RecordHashes)

    async def republish(self, *, user_ids: Sequence[uuid.UUID]) -> int:
        answer = await self._post("/republish", ae.UsersRepublishRequest(userIds=list(user_ids)), ae.Republished)
        return answer.republished


@dataclass(frozen=True, slots=True)
class CheckConfig:
    users_per_page: int = 200
    # Differences younger than this are left to the events that may still be on their way.
    settle_seconds: float = 300.0


class InFlight:
    """Records re-published lately: until their events arrive they still differ, and a pass that came
    sooner than the settle time would ask for them again."""

    def __init__(self, settle_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._settle, self._clock = settle_seconds, clock
        self._since: dict[tuple[uuid.UUID, str], float] = {}

    def leave_out(self, user: uuid.UUID, ids: Sequence[str]) -> list[str]:
        """``ids`` without those re-published within the settle time."""
        now = self._clock()
        self._since = {key: at for key, at in self._since.items() if now - at < self._settle}
        return [i for i in ids if (user, i) not in self._since]

    def mark(self, user: uuid.UUID, ids: Sequence[str]) -> None:
        now = self._clock()
        self._since.update({(user, i): now for i in ids})


# --- one pass ----------------------------------------------------------------------------------------


async def check_bookmark_urls(
    *, sessions: SessionFactory, source: BookmarksSource, config: CheckConfig, in_flight: InFlight
) -> int:
    """Compare every user's projection with bookmarks once and have differences re-published; returns
    how many records were re-published."""
    after: uuid.UUID | None = None
    repaired = 0
    while True:
        page = await source.digests(after=after, limit=config.users_per_page)
        repaired += await _check_page(sessions=sessions, source=source, page=page, config=config, in_flight=in_flight)
        if not page.more or not page.users:
            return repaired
        after = page.users[-1].userId


async def _check_page(
    *, sessions: SessionFactory, source: BookmarksSource, page: ae.DigestPage, config: CheckConfig, in_flight: InFlight
) -> int:
    users = [user.userId for user in page.users]
    async with sessions() as session:
        ours = await digests.digests(session, users)
        purged = await digests.deleted_users(session, users)
    repaired = 0
    for user in page.users:
        if user.userId in purged:  # their bookmarks are gone here on purpose; bookmarks purges too
            continue
        buckets = ae.differing_buckets(ae.digest_of(user.buckets), ae.digest_of(ours[user.userId]))
        if buckets:
            repaired += await _repair_user(
                sessions=sessions, source=source, user=user.userId, buckets=buckets, config=config, in_flight=in_flight
            )
    return repaired


async def _repair_user(
    *,
    sessions: SessionFactory,
    source: BookmarksSource,
    user: uuid.UUID,
    buckets: list[int],
    config: CheckConfig,
    in_flight: InFlight,
) -> int:
    theirs = await source.records(user=user, buckets=buckets, settle_seconds=config.settle_seconds)
    async with sessions() as session:
        ours = await digests.record_hashes(session, user, buckets)
    differing = ae.differing_ids(theirs.hashes, ours, unsettled=theirs.unsettled)
    ids = in_flight.leave_out(user, differing)[:MAX_REPAIRS_PER_USER]
    republished = 0
    for chunk in ae.chunks(ids):
        async with transaction(sessions) as session:
            await digests.forget_positions(session, user, chunk)
        count = await source.republish(user=user, ids=chunk)  # 0 for a user bookmarks has deleted
        in_flight.mark(user, chunk)
        ANTI_ENTROPY_REPAIRED.labels(SERVICE, PROJECTION).inc(count)
        republished += count
    if ids:
        log.warning(
            "projection differed from bookmarks; re-published",
            extra={
                "user_id": str(user),
                "projection": PROJECTION,
                "records": len(ids),
                "republished": republished,
                "sample": ids[:5],
            },
        )
    return republished


# --- the loop ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Check:
    """One projection's comparison with its source: runs one pass, returns the records re-published."""

    projection: str
    run: Callable[[InFlight], Awaitable[int]]


async def run_anti_entropy(
    *, engine: AsyncEngine, checks: Sequence[Check], interval_seconds: float, settle_seconds: float
) -> None:
    """A pass every ``interval_seconds`` (the first after one interval: a starting process has other work)."""
    for check in checks:
        initialise_anti_entropy_series(SERVICE, check.projection)
    memories = {check.projection: InFlight(settle_seconds) for check in checks}
    while True:
        await asyncio.sleep(interval_seconds)
        try:
            await _pass_if_leader(engine=engine, checks=checks, memories=memories)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # our database away: every check waits for the next pass
            for check in checks:
                ANTI_ENTROPY_CHECKS.labels(SERVICE, check.projection, "failed").inc()
            log.warning("anti-entropy pass failed: %s", exc)


async def _pass_if_leader(*, engine: AsyncEngine, checks: Sequence[Check], memories: dict[str, InFlight]) -> None:
    """One pass, unless another replica's is running: a session-level advisory lock on a connection of its
    own, in autocommit so that no transaction stays open for the pass; it goes with the connection."""
    async with engine.connect() as raw:
        lock = await raw.execution_options(isolation_level="AUTOCOMMIT")
        if not await lock.scalar(select(func.pg_try_advisory_lock(LOCK_ID))):
            return
        try:
            for check in checks:
                await _run_check(check, memories[check.projection])
        finally:
            await lock.scalar(select(func.pg_advisory_unlock(LOCK_ID)))


async def _run_check(check: Check, memory: InFlight) -> None:
    """One projection's pass; a failure (its source away) leaves the other projections' passes alone."""
    try:
        repaired = await check.run(memory)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        ANTI_ENTROPY_CHECKS.labels(SERVICE, check.projection, "failed").inc()
        log.warning("anti-entropy pass failed: %s", exc, extra={"projection": check.projection})
        return
    ANTI_ENTROPY_CHECKS.labels(SERVICE, check.projection, "completed").inc()
    ANTI_ENTROPY_LAST_COMPLETED.labels(SERVICE, check.projection).set(time.time())
    log.info("anti-entropy pass completed", extra={"projection": check.projection, "records": repaired})
