"""Concurrent job slots: claim a due job under a lease, keep the lease alive, record the outcome.

Crash safety comes from the lease, not from this process: a job whose worker dies stays ``processing``
until its lease runs out, then any worker claims it again (ARCHITECTURE.md, rule 4). Every write that ends
an attempt is fenced by (worker id, attempt number), so a worker that lost its lease can never
overwrite the attempt that replaced it. On shutdown, attempts in progress are handed back uncounted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import asyncpg
from opentelemetry import trace
from opentelemetry.propagate import extract
from opentelemetry.trace import Link, SpanKind

from common.db import Deadlines, SessionFactory, asyncpg_dsn
from common.outages import is_outage
from common.retry import Backoff, retry
from enrichment import service
from enrichment.domain.model import JOB_STATUSES
from enrichment.fetch import FetchError
from enrichment.metrics import ATTEMPT_DURATION, FETCH_ERRORS, JOBS, OLDEST_PENDING_AGE
from enrichment.service import ClaimedJob
from enrichment.worker.attempt import Enricher, Enrichment
from enrichment.worker.idle import IdleSlots

log = logging.getLogger("enrichment.worker")
_tracer = trace.get_tracer("enrichment.worker")

JOBS_CHANNEL = "enrichment_jobs"
# An unexpected failure (a bug, an unreadable analyser answer) is retried like a server error: the
# attempt budget still bounds it, and the closed error-code set (docs/api-guide.md, section 6) has no better name.
UNEXPECTED_ERROR_CODE = "upstream-5xx"


class JobWorker:
    def __init__(
        self,
        *,
        sessions: SessionFactory,
        database_url: str,
        enricher: Enricher,
        worker_id: str,
        concurrency: int,
        lease_seconds: float,
        poll_seconds: float,
        retry_delays: tuple[float, ...],
        cache_ttl_seconds: int,
        job_retention_seconds: int,
        max_crashes: int = 5,
        stats_interval_seconds: float = 5.0,
        housekeeping_interval_seconds: float = 300.0,
        deadlines: Deadlines | None = None,
    ) -> None:
        self.sessions = sessions
        self.dsn = asyncpg_dsn(database_url)
        self.enricher = enricher
        self.worker_id = worker_id
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.poll_seconds = poll_seconds
        self.retry_delays = retry_delays
        self.max_crashes = max_crashes
        self.cache_ttl_seconds = cache_ttl_seconds
        self.job_retention_seconds = job_retention_seconds
        self.stats_interval_seconds = stats_interval_seconds
        self.housekeeping_interval_seconds = housekeeping_interval_seconds
        self.deadlines = deadlines or Deadlines()
        self._idle = IdleSlots(poll_seconds)  # one idle slot polls for due work
        self.busy = 0

    # --- loops ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run every slot plus the listener, stats and housekeeping loops until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._listen(), name="jobs-listener")
            group.create_task(self._every(self.stats_interval_seconds, self.refresh_stats), name="job-stats")
            group.create_task(self._every(self.housekeeping_interval_seconds, self._housekeeping), name="housekeeping")
            for slot in range(self.concurrency):
                group.create_task(self._slot(), name=f"slot-{slot}")

    async def _slot(self) -> None:
        backoff = Backoff(first=0.5, cap=10.0)
        polled = False
        while True:
            idle = self._idle.current()
            try:
                job = await service.claim_job(
                    sessions=self.sessions,
                    worker_id=self.worker_id,
                    lease_seconds=self.lease_seconds,
                    max_crashes=self.max_crashes,
                )
                backoff.reset()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # database unreachable or slow: back off, the jobs are safe in it
                log.warning("claiming a job failed: %r", exc)
                await backoff.wait()
                continue
            if job is None:
                # Due retries and expired leases send no notification: they are found by the poll.
                polled = await self._idle.wait(idle)
                continue
            if polled:  # the poll found work (due retries come in groups): let the other slots look too
                self._idle.notify()
                polled = False
            self.busy += 1
            try:
                await self.process(job)
            finally:
                self.busy -= 1

    async def _listen(self) -> None:
        """LISTEN for new jobs (a latency optimisation only: slots poll anyway)."""
        backoff = Backoff(first=0.5, cap=30.0)
        while True:
            conn: asyncpg.Connection | None = None
            try:
                conn = await asyncpg.connect(
                    self.dsn, timeout=self.deadlines.connect, command_timeout=self.deadlines.statement
                )
                await conn.add_listener(JOBS_CHANNEL, lambda *_: self._idle.notify())
                backoff.reset()
                while not conn.is_closed():  # noqa: ASYNC110 - asyncpg offers no close event to await
                    await asyncio.sleep(5.0)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("jobs listener reconnecting: %r", exc)
            finally:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close(timeout=self.deadlines.connect)
            await backoff.wait()

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
                log.warning("periodic task failed: %r", exc)
            await asyncio.sleep(seconds)

    async def refresh_stats(self) -> None:
        stats = await service.job_stats(sessions=self.sessions)
        for status in JOB_STATUSES:
            JOBS.labels(status).set(stats.counts.get(status, 0))
        OLDEST_PENDING_AGE.set(stats.oldest_due_wait_seconds)

    async def _housekeeping(self) -> None:
        await service.housekeeping(sessions=self.sessions, job_retention_seconds=self.job_retention_seconds)

    # --- one job ---------------------------------------------------------------------------------------

    async def process(self, job: ClaimedJob) -> str:
        """Run one attempt of ``job`` and record its outcome; returns the outcome label."""
        # One trace per attempt, linked to the enqueue request that created the job (a retry may run
        # much later, so a link rather than a parent); the events it writes carry this span.
        origin = trace.get_current_span(extract(job.trace_context)).get_span_context()
        links = [Link(origin)] if origin.is_valid else []
        with _tracer.start_as_current_span("enrichment attempt", kind=SpanKind.CONSUMER, links=links) as span:
            span.set_attribute("enrichment.job_id", str(job.id))
            span.set_attribute("enrichment.attempt", job.attempts)
            outcome = await self._attempt(job)
            span.set_attribute("enrichment.outcome", outcome)
            return outcome

    async def _attempt(self, job: ClaimedJob) -> str:
        started = time.perf_counter()
        work = asyncio.create_task(self.enricher.enrich(job), name=f"attempt-{job.id}")
        heartbeat = asyncio.create_task(self._heartbeat(job), name=f"heartbeat-{job.id}")
        try:
            await asyncio.wait({work, heartbeat}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # Shutting down: hand the attempt back so another worker starts it now, uncounted.
            await _cancel(work, heartbeat)
            with contextlib.suppress(Exception):
                await asyncio.shield(service.release_job(sessions=self.sessions, job=job, worker_id=self.worker_id))
            ATTEMPT_DURATION.labels("released").observe(time.perf_counter() - started)
            raise
        if not work.done():
            # The heartbeat found the job taken over (our lease ran out): another worker owns it now.
            await _cancel(work, heartbeat)
            log.warning("lease lost; attempt dropped", extra={"job_id": str(job.id), "attempt": job.attempts})
            ATTEMPT_DURATION.labels("lost").observe(time.perf_counter() - started)
            return "lost"
        await _cancel(heartbeat)
        outcome = await self._record(job, work)
        ATTEMPT_DURATION.labels(outcome).observe(time.perf_counter() - started)
        return outcome

    async def _record(self, job: ClaimedJob, work: asyncio.Task[Enrichment]) -> str:
        """Record the attempt's outcome. An outage while recording is retried, backing off, for as long as
        the lease lasts: a slow database neither loses a finished attempt nor counts it as a crash. The
        writes are fenced by the attempt, so a retry after a commit whose answer was lost records nothing
        twice (it finds the attempt ended and reports it lost)."""
        store = self._outcome_writer(job, work)
        try:
            return await retry(
                store,
                retryable=is_outage,
                backoff=Backoff(first=0.5, cap=5.0),
                deadline_seconds=self.lease_seconds,
                on_retry=lambda exc, delay: log.warning(
                    "recording an attempt waits for the database",
                    extra={"job_id": str(job.id), "retry_in": round(delay, 2), "error": type(exc).__name__},
                ),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Could not record (database away for longer than the lease): the job is attempted again.
            log.error("recording an attempt failed", extra={"job_id": str(job.id)}, exc_info=exc)
            return "unrecorded"

    def _outcome_writer(self, job: ClaimedJob, work: asyncio.Task[Enrichment]) -> Callable[[], Awaitable[str]]:
        """What records the finished attempt ``work`` (called again after an outage)."""
        error = work.exception()
        if error is None:
            enrichment = work.result()

            async def complete() -> str:
                with _tracer.start_as_current_span("store result"):
                    kept = await service.complete_job(
                        sessions=self.sessions,
                        job=job,
                        worker_id=self.worker_id,
                        result=enrichment.result,
                        snapshots=enrichment.snapshots,
                        images=enrichment.images,
                        cache_ttl_seconds=self.cache_ttl_seconds,
                    )
                return "completed" if kept else "lost"

            return complete
        code: str
        if isinstance(error, FetchError):
            FETCH_ERRORS.labels(error.code).inc()
            code, retriable = error.code, error.retriable
            log.info("attempt failed", extra={"job_id": str(job.id), "code": code, "detail": error.message})
        else:
            code, retriable = UNEXPECTED_ERROR_CODE, True
            log.error("attempt crashed", extra={"job_id": str(job.id)}, exc_info=error)

        async def fail() -> str:
            status = await service.fail_attempt(
                sessions=self.sessions,
                job=job,
                worker_id=self.worker_id,
                error_code=code,
                retriable=retriable,
                retry_delays=self.retry_delays,
            )
            return status or "lost"

        return fail

    async def _heartbeat(self, job: ClaimedJob) -> None:
        """Extend the lease every third of it; return only when the lease is lost.

        A failed extension (the database away or not answering) is tried again soon, backing off, not a
        whole interval later: the lease then survives a database that stops answering for up to about
        two thirds of it, counted from the last extension."""
        interval = self.lease_seconds / 3
        backoff = Backoff(first=min(0.5, interval), cap=interval)
        delay = interval
        while True:
            await asyncio.sleep(delay)
            try:
                kept = await service.extend_lease(
                    sessions=self.sessions, job=job, worker_id=self.worker_id, lease_seconds=self.lease_seconds
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a database blip: the lease is still valid for a while, try again
                log.warning("lease heartbeat failed: %r", exc)
                delay = backoff.next_delay()
                continue
            if not kept:
                return
            backoff.reset()
            delay = interval


async def _cancel(*tasks: asyncio.Task[object] | asyncio.Task[Enrichment] | asyncio.Task[None]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
