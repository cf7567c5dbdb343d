"""Link health use cases (docs/api-guide.md, section 15), one transaction each: scheduling the URLs of
live bookmarks, claiming a due check under the politeness rules, recording a result and sending it to
every bookmark that has the URL, and a user's request to check one bookmark now."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from common.db import SessionFactory, transaction
from common.errors import NotFound, RateLimited
from common.events import Event, LinkChecked
from common.outbox import add_events
from common.urls import InvalidUrlError, normalize_url
from enrichment.domain.links import (
    Decision,
    LinkPolicy,
    Observation,
    Verdict,
    classify,
    decide,
    first_check_at,
    host_free_at,
    next_rate_slot,
    pick,
    rate_allows,
)
from enrichment.links import store
from enrichment.links.store import Leased, QueueStats

__all__ = [
    "CHECK_NOW_PER_MINUTE",
    "Claim",
    "Leased",
    "QueueStats",
    "claim",
    "host_of",
    "queue_stats",
    "record",
    "release",
    "request_check",
    "schedule_new",
    "verdict_of",
]

CHECK_NOW_PER_MINUTE: Final = 10
_MINUTE: Final = timedelta(minutes=1)
# Due checks looked at per claim: enough to get past the checks of a few busy hosts.
_CANDIDATES: Final = 20


def host_of(normalized_url: str) -> str:
    return normalize_url(normalized_url).domain


def _host_or_none(url: str) -> str:
    """The host of a stored normalized URL; "" for one that does not parse (its check finds it invalid)."""
    try:
        return host_of(url)
    except InvalidUrlError:
        return ""


def _normalized(url: str) -> str:
    try:
        return normalize_url(url).url
    except InvalidUrlError as exc:
        raise ValueError(str(exc)) from None


def verdict_of(observation: Observation, normalized_url: str) -> Verdict:
    return classify(observation, normalized_url=normalized_url, normalize=_normalized)


async def schedule_new(
    *, sessions: SessionFactory, now: datetime, policy: LinkPolicy, jitter: Callable[[], float], limit: int = 500
) -> int:
    """Give the URLs of live bookmarks that have no check one, first due somewhere in the coming interval;
    how many were added (the caller repeats while it is ``limit``)."""
    async with transaction(sessions) as session:
        urls = await store.unscheduled_urls(session, limit=limit)
        rows = [(url, _host_or_none(url), first_check_at(now, policy, jitter())) for url in urls]
        await store.add_checks(session, rows)
    return len(urls)


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed check, or None with when to look again (the global rate's next slot)."""

    leased: Leased | None
    retry_at: datetime | None = None


async def claim(
    *, sessions: SessionFactory, now: datetime, worker_id: str, lease: timedelta, rate_per_second: float
) -> Claim:
    """Claim the first due check whose host is free, if the global rate allows a start at ``now``."""
    async with transaction(sessions) as session:
        next_slot = await store.lock_rate(session, now=now)
        if not rate_allows(next_slot, now):
            return Claim(None, next_slot)
        chosen = pick(await store.due_candidates(session, now=now, limit=_CANDIDATES), now)
        if chosen is None:
            return Claim(None)
        leased = await store.lease(
            session, normalized_url=chosen.normalized_url, now=now, lease=lease, worker_id=worker_id
        )
        await store.set_rate(session, next_slot_at=next_rate_slot(now, rate_per_second))
    return Claim(leased)


async def record(
    *,
    sessions: SessionFactory,
    leased: Leased,
    worker_id: str,
    observation: Observation,
    now: datetime,
    policy: LinkPolicy,
    jitter: float,
) -> Decision | None:
    """Record a finished check: the URL's new state and next check, its host free two seconds from now,
    and, when the check settled the status, a ``link.checked`` event for every live bookmark with the URL.
    A URL no live bookmark has any more loses its check. None when the lease was lost meanwhile."""
    decision = decide(
        leased.state, verdict_of(observation, leased.normalized_url), now=now, policy=policy, jitter=jitter
    )
    async with transaction(sessions) as session:
        kept = await store.finish(
            session,
            leased,
            worker_id=worker_id,
            state=decision.state,
            next_check_at=decision.next_check_at,
            checked_at=now,
            result=observation.label,
        )
        if not kept:
            return None
        await store.hold_host(session, host=leased.host, until=host_free_at(now))
        bookmarks = await store.live_bookmarks(session, leased.normalized_url)
        if not bookmarks:
            await store.delete_check(session, leased.normalized_url)
        elif decision.settled and decision.state.status is not None:
            events: list[Event] = [
                LinkChecked(
                    userId=bookmark.user_id,
                    clientBookmarkId=bookmark.client_bookmark_id,
                    normalizedUrl=leased.normalized_url,
                    linkStatus=decision.state.status,
                    checkedAt=now,
                    movedTo=decision.state.moved_to,
                )
                for bookmark in bookmarks
            ]
            await add_events(session, events)
    return decision


async def release(*, sessions: SessionFactory, leased: Leased, worker_id: str, now: datetime) -> None:
    async with transaction(sessions) as session:
        await store.release(session, leased, worker_id=worker_id, now=now)


async def request_check(
    *, sessions: SessionFactory, user_id: uuid.UUID, client_bookmark_id: str, now: datetime
) -> None:
    """``POST /v1/bookmarks/{id}/check-link``: make the bookmark's URL due now, at most
    CHECK_NOW_PER_MINUTE times per user and minute."""
    async with transaction(sessions) as session:
        url = await store.bookmark_url(session, user_id, client_bookmark_id)
        if url is None:
            raise NotFound(f"No bookmark {client_bookmark_id!r}.")
        window_start = now.replace(second=0, microsecond=0)
        used, started = await store.count_request(session, user_id, window_start=window_start)
        if used > CHECK_NOW_PER_MINUTE:
            wait = started + _MINUTE - now
            raise RateLimited(
                f"At most {CHECK_NOW_PER_MINUTE} link checks per minute; try again shortly.",
                retry_after_seconds=max(1, int(wait.total_seconds()) + 1),
            )
        try:
            host = host_of(url)
        except InvalidUrlError:
            raise NotFound(f"No checkable bookmark {client_bookmark_id!r}.") from None
        await store.check_now(session, normalized_url=url, host=host, now=now)


async def queue_stats(*, sessions: SessionFactory, now: datetime) -> QueueStats:
    async with sessions() as session:
        return await store.queue_stats(session, now=now)
