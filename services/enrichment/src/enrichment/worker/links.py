"""The link checker loop of the worker (docs/api-guide.md, section 15).

Slots claim due checks from PostgreSQL (``link_checks``) under a lease, probe the URL with the SSRF-safe
fetcher (HEAD, a small ranged GET when HEAD fails), and record the verdict; a scheduler gives the URLs of
new bookmarks their first check, and a stats loop exports the queue's size and age. Politeness holds
across every worker replica because it lives in the claim: the global rate row and the hosts' next free
time are read and written in the claim's transaction (enrichment.links.service.claim).

Every time comes from the injected clock; tests drive :meth:`LinkChecker.check_due` step by step.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from common.db import SessionFactory
from common.retry import Backoff
from enrichment.domain.links import LinkPolicy, Observation
from enrichment.domain.model import Clock
from enrichment.fetch import Probe, SafeFetcher
from enrichment.links import service
from enrichment.links.service import Leased
from enrichment.metrics import LINK_CHECKS, LINK_CHECKS_DUE, LINK_CHECKS_OLDEST_DUE
from enrichment.worker.idle import IdleSlots

log = logging.getLogger("enrichment.links")
_tracer = trace.get_tracer("enrichment.links")

# Answers that are a bot challenge rather than the page (checked on the final answer's headers and the
# first bytes a ranged GET read).
_BOT_WALL_HEADERS: Final = (
    ("cf-mitigated", "challenge"),
    ("x-amzn-waf-action", "challenge"),
    ("x-amzn-waf-action", "captcha"),
)
_BOT_WALL_MARKERS: Final = (
    b"<title>Just a moment...</title>",
    b"/cdn-cgi/challenge-platform/",
    b"captcha-delivery.com",
)


# URLs given their first check per transaction.
_SCHEDULE_BATCH: Final = 500


@dataclass(frozen=True, slots=True)
class LinkCheckConfig:
    policy: LinkPolicy
    rate_per_second: float
    timeout_seconds: float
    concurrency: int = 4
    lease: timedelta = timedelta(minutes=2)
    poll_seconds: float = 5.0
    schedule_interval_seconds: float = 300.0
    stats_interval_seconds: float = 15.0


def observation_of(probe: Probe) -> Observation:
    """What the verdict rules need from a probe: its answers, its failure, and whether the final answer is
    a known bot wall."""
    bot_wall = False
    if probe.failure is None and probe.hops:
        headers = {name.lower(): value.lower() for name, value in probe.headers.items()}
        bot_wall = any(headers.get(name) == value for name, value in _BOT_WALL_HEADERS) or any(
            marker in probe.body_start for marker in _BOT_WALL_MARKERS
        )
    return Observation(hops=probe.hops, failure=probe.failure, bot_wall=bot_wall)


class LinkChecker:
    def __init__(
        self,
        *,
        sessions: SessionFactory,
        fetcher: SafeFetcher,
        clock: Clock,
        config: LinkCheckConfig,
        worker_id: str,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.sessions = sessions
        self.fetcher = fetcher
        self.clock = clock
        self.config = config
        self.worker_id = worker_id
        self.jitter = jitter
        self._idle = IdleSlots(config.poll_seconds)  # made again by run(), from the config it runs with

    # --- steps (what the loops repeat; tests call them directly) -----------------------------------------

    async def schedule(self) -> int:
        """Give every URL of a live bookmark without a check its first one; how many were added."""
        total = 0
        while True:
            added = await service.schedule_new(
                sessions=self.sessions,
                now=self.clock.now(),
                policy=self.config.policy,
                jitter=self.jitter,
                limit=_SCHEDULE_BATCH,
            )
            total += added
            if added < _SCHEDULE_BATCH:
                return total

    async def check_one(self) -> service.Claim:
        """Claim one due check and run it; the claim says what was done (its ``leased`` is None when the
        rate or the hosts allow nothing now)."""
        claimed = await service.claim(
            sessions=self.sessions,
            now=self.clock.now(),
            worker_id=self.worker_id,
            lease=self.config.lease,
            rate_per_second=self.config.rate_per_second,
        )
        if claimed.leased is not None:
            await self.check(claimed.leased)
        return claimed

    async def check_due(self) -> int:
        """Run checks until none may start now; how many ran."""
        ran = 0
        while (await self.check_one()).leased is not None:
            ran += 1
        return ran

    async def check(self, leased: Leased) -> str:
        """Probe a claimed check's URL and record what it found; returns the verdict (or ``lost``)."""
        with _tracer.start_as_current_span("link check", kind=SpanKind.INTERNAL) as span:
            span.set_attribute("server.address", leased.host)
            try:
                probe = await self.fetcher.probe(leased.normalized_url, timeout_seconds=self.config.timeout_seconds)
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await asyncio.shield(
                        service.release(
                            sessions=self.sessions, leased=leased, worker_id=self.worker_id, now=self.clock.now()
                        )
                    )
                raise
            observation = observation_of(probe)
            verdict = service.verdict_of(observation, leased.normalized_url)
            decision = await service.record(
                sessions=self.sessions,
                leased=leased,
                worker_id=self.worker_id,
                observation=observation,
                now=self.clock.now(),
                policy=self.config.policy,
                jitter=self.jitter(),
            )
            outcome = verdict.kind if decision is not None else "lost"
            span.set_attribute("link.result", observation.label)
            span.set_attribute("link.verdict", outcome)
            LINK_CHECKS.labels(outcome).inc()
            log.info("link checked", extra={"host": leased.host, "result": observation.label, "verdict": outcome})
            return outcome

    async def refresh_stats(self) -> None:
        stats = await service.queue_stats(sessions=self.sessions, now=self.clock.now())
        LINK_CHECKS_DUE.set(stats.due)
        LINK_CHECKS_OLDEST_DUE.set(stats.oldest_due_seconds)

    # --- loops --------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """The scheduler, the stats and ``concurrency`` checking slots, until cancelled."""
        self._idle = IdleSlots(self.config.poll_seconds)
        async with asyncio.TaskGroup() as group:
            group.create_task(self._every(self.config.schedule_interval_seconds, self.schedule), name="link-schedule")
            group.create_task(self._every(self.config.stats_interval_seconds, self.refresh_stats), name="link-stats")
            for slot in range(self.config.concurrency):
                group.create_task(self._slot(), name=f"link-slot-{slot}")

    async def _slot(self) -> None:
        backoff = Backoff(first=0.5, cap=30.0)
        polled = False
        while True:
            idle = self._idle.current()
            try:
                claimed = await self.check_one()
                backoff.reset()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database away: the checks are safe in it
                log.warning("link check slot failed: %r", exc)
                await backoff.wait()
                continue
            if claimed.leased is not None or claimed.retry_at is not None:
                if polled:  # the poll found due checks: the other slots look too
                    self._idle.notify()
                    polled = False
            if claimed.leased is not None:
                continue
            if claimed.retry_at is None:  # nothing due: one idle slot polls for the next due check
                polled = await self._idle.wait(idle)
                continue
            # Due, but the global rate's next slot is later: wait for it, a little spread between slots.
            wait = min(self.config.poll_seconds, max(0.0, (claimed.retry_at - self.clock.now()).total_seconds()))
            await asyncio.sleep(wait + random.uniform(0, 0.05))  # noqa: S311 -- spreading, not security

    @staticmethod
    async def _every(seconds: float, action: Callable[[], object]) -> None:
        while True:
            try:
                result = action()
                if asyncio.iscoroutine(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("link check task failed: %r", exc)
            await asyncio.sleep(seconds)
