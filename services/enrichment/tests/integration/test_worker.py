"""The enrichment worker against real PostgreSQL and a local web site.

Each test starts from an empty database, so a worker only ever sees the jobs its test created. Jobs are created
with the enqueue use case itself; the worker runs in-process (``create_worker_app``) or, for the crash
test, as real ``python -m enrichment.worker`` processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import psutil
import pytest
from enrichment_support import THUMBNAIL, CallCount, Db, Site, enrichment_settings
from prometheus_client import generate_latest

from devstack.testing import eventually, free_port, serve_app
from enrichment import service
from enrichment.domain.model import Entitlements, SystemClock
from enrichment.pipeline.browser import find_chromium
from enrichment.worker.app import create_worker_app

ALLOWED = Entitlements(exists=True, use_ai=True, is_pro=False)


@pytest.fixture(scope="module")
async def worker_db(infra: Any) -> AsyncIterator[Db]:
    database = Db(infra.fresh_database("enrichment"))
    yield database
    await database.close()


@pytest.fixture
async def db(worker_db: Db) -> Db:
    """The module's database, emptied: a test's worker sees only the jobs that test created."""
    tables = await worker_db.rows(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
    )
    await worker_db.execute(f"TRUNCATE {', '.join(r['tablename'] for r in tables)} RESTART IDENTITY CASCADE")
    return worker_db


async def enqueue(
    db: Db, url: str, *, user: uuid.UUID | None = None, bookmark: str | None = None
) -> tuple[uuid.UUID, str]:
    user = user or uuid.uuid4()
    bookmark = bookmark or f"bm-{uuid.uuid4().hex[:10]}"
    outcome = await service.enqueue(
        sessions=db.sessions,
        user_id=user,
        client_bookmark_id=bookmark,
        url=url,
        client_saved_at=None,
        entitlements=ALLOWED,
        clock=SystemClock(),
    )
    assert not outcome.cache_hit
    return user, bookmark


async def the_job(db: Db) -> Any:
    return await db.one("SELECT * FROM jobs")


async def job_ended(db: Db) -> Any:
    job = await the_job(db)
    return job if job["status"] in ("completed", "failed") else None


def worker_app(infra: Any, db: Db, **overrides: Any) -> Any:
    return create_worker_app(enrichment_settings(infra, db.url, auth_url="http://127.0.0.1:9", **overrides))


# --- success -----------------------------------------------------------------------------------------


async def test_worker_enriches_a_page_for_every_waiting_bookmark(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    url = site.url(f"/article/{key}")
    alice, a = await enqueue(db, url)
    bob, b = await enqueue(db, url + "?utm_source=newsletter")  # same page: attached, not a second job

    async with serve_app(worker_app(infra, db)) as worker_url:
        job = await eventually(lambda: job_ended(db))
        async with httpx.AsyncClient(base_url=worker_url) as http:
            metrics = generate_latest().decode()
            assert (await http.get("/metrics")).status_code == 404  # metrics have their own port
            assert (await http.get("/healthz")).status_code == 200
            assert (await http.get("/readyz")).status_code == 200

    assert job["status"] == "completed"
    assert job["attempts"] == 1
    assert job["error_code"] is None
    assert site.hits[f"/article/{key}"] == 1

    cache = await db.one("SELECT * FROM results_cache WHERE normalized_url = :n", n=url)
    result = cache["result"]
    assert result["normalizedUrl"] == url
    assert result["domain"] == "127.0.0.1"
    assert result["title"] == f"Sourdough guide {key}"
    assert result["description"] == "How sourdough bread rises without commercial yeast."
    assert result["thumbnailUrl"] == f"/v1/previews/images/{THUMBNAIL.id}.webp"  # served by the platform
    assert result["summary"]
    assert result["saveWhy"]
    assert 1 <= len(result["tags"]) <= 8
    assert all(tag == tag.lower() for tag in result["tags"])
    assert result["snapshotStatus"] == "ready"
    assert result["summarySource"] == "offline"  # no LLM configured here
    assert cache["expires_at"] > cache["created_at"]

    kinds = {
        r["kind"]: r
        for r in await db.rows("SELECT kind, content_type, data FROM snapshots WHERE normalized_url = :n", n=url)
    }
    assert set(kinds) == {"html", "readable_text", "thumbnail"}
    assert site.hits[f"/img/{key}.png"] == 1  # fetched once, by the worker
    assert (kinds["thumbnail"]["content_type"], bytes(kinds["thumbnail"]["data"])) == ("image/webp", THUMBNAIL.data)
    assert bytes(await db.scalar("SELECT data FROM preview_images WHERE id = :i", i=THUMBNAIL.id)) == THUMBNAIL.data
    assert f"Sourdough guide {key}".encode() in bytes(kinds["html"]["data"])
    assert b"lactobacilli" in bytes(kinds["readable_text"]["data"])

    for user, bookmark in ((alice, a), (bob, b)):
        thumbnail = await service.read_snapshot(
            sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, kind="thumbnail"
        )
        assert thumbnail.data == THUMBNAIL.data
        view = await service.enrichment_status(
            sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, is_pro=True
        )
        assert view.status == "completed"
        assert view.result is not None and view.result["title"] == result["title"]
        assert view.result["saveWhy"] == result["saveWhy"]
        events = await db.events("enrichment.completed", userId=str(user), clientBookmarkId=bookmark)
        assert len(events) == 1 and events[0]["cacheHit"] is False
        assert events[0]["result"]["tags"] == result["tags"]
        tags = await db.scalar("SELECT array_agg(tag ORDER BY tag) FROM user_tags WHERE user_id = :u", u=user)
        assert tags == sorted(result["tags"])

    # Events carry the attempt's trace context to their consumers.
    headers = await db.rows("SELECT headers FROM outbox WHERE topic = 'enrichment.completed'")
    assert headers and all("traceparent" in row["headers"] for row in headers)

    # The next user's enqueue of that page is a cache hit.
    outcome = await service.enqueue(
        sessions=db.sessions,
        user_id=uuid.uuid4(),
        client_bookmark_id="c",
        url=url,
        client_saved_at=None,
        entitlements=ALLOWED,
        clock=SystemClock(),
    )
    assert outcome.cache_hit and outcome.status == "completed"

    for name in (
        'enrichment_job_transitions_total{status="completed"}',
        'enrichment_attempt_duration_seconds_count{outcome="completed"}',
        'enrichment_jobs{status="pending"}',
        "enrichment_oldest_pending_job_age_seconds",
        'enrichment_cache_lookups_total{result="miss"}',
    ):
        assert name in metrics, name


@pytest.mark.parametrize(
    ("named", "kept"),
    [
        ("{site}/article/{key}?utm_source=amp#top", "{site}/article/{key}"),  # this site: kept, normalized
        ("https://news.example/article", None),  # another site: a hostile claim, refused
        ("javascript:alert(1)", None),
    ],
)
async def test_the_result_carries_the_canonical_url_the_page_names_on_its_own_site_only(
    infra: Any, db: Db, site: Site, named: str, kept: str | None
) -> None:
    key = uuid.uuid4().hex[:8]
    url = site.url(f"/canonical/{key}?" + urlencode({"to": named.format(site=site.base_url, key=key)}))
    user, bookmark = await enqueue(db, url)

    async with serve_app(worker_app(infra, db)):
        job = await eventually(lambda: job_ended(db))

    assert job["status"] == "completed"
    (event,) = await db.events("enrichment.completed", userId=str(user), clientBookmarkId=bookmark)
    assert event["result"]["canonicalUrl"] == (kept.format(site=site.base_url, key=key) if kept else None)


async def test_plain_text_is_enriched_without_snapshots(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    await enqueue(db, site.url(f"/plain/{key}"))
    async with serve_app(worker_app(infra, db)):
        job = await eventually(lambda: job_ended(db))
    assert job["status"] == "completed"
    result = (await db.one("SELECT result FROM results_cache"))["result"]
    assert result["snapshotStatus"] == "skipped"
    assert result["title"] == f"Release notes {key}"
    assert await db.scalar("SELECT count(*) FROM snapshots") == 0


@pytest.mark.browser
async def test_browser_snapshot_completes_the_snapshot(infra: Any, db: Db, site: Site) -> None:
    from enrichment.pipeline import find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium installed")
    key = uuid.uuid4().hex[:8]
    user, bookmark = await enqueue(db, site.url(f"/article/{key}"))
    async with serve_app(worker_app(infra, db, browser="required")):
        job = await eventually(lambda: job_ended(db), timeout=90)
    assert job["status"] == "completed", job
    result = (await db.one("SELECT result FROM results_cache"))["result"]
    assert result["snapshotStatus"] == "completed"
    kinds = {r["kind"]: r for r in await db.rows("SELECT kind, content_type, data FROM snapshots")}
    assert set(kinds) == {"html", "screenshot", "readable_text", "thumbnail"}
    assert kinds["screenshot"]["content_type"] == "image/png"
    assert bytes(kinds["screenshot"]["data"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert f"Sourdough guide {key}".encode() in bytes(kinds["html"]["data"])
    shot = await service.read_snapshot(
        sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, kind="screenshot"
    )
    assert shot.content_type == "image/png"


# --- failures and retries ------------------------------------------------------------------------------


async def test_upstream_404_fails_at_once_without_retry(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    user, bookmark = await enqueue(db, site.url(f"/status/404/{key}"))
    async with serve_app(worker_app(infra, db)):
        job = await eventually(lambda: job_ended(db))
    assert (job["status"], job["error_code"], job["attempts"]) == ("failed", "upstream-4xx", 1)
    assert site.hits[f"/status/404/{key}"] == 1
    events = await db.events("enrichment.failed", clientBookmarkId=bookmark)
    assert [(e["status"], e["errorCode"]) for e in events] == [("failed", "upstream-4xx")]
    view = await service.enrichment_status(
        sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, is_pro=False
    )
    assert (view.status, view.error_code, view.result) == ("failed", "upstream-4xx", None)
    assert await db.scalar("SELECT count(*) FROM results_cache") == 0


async def test_503_then_200_retries_then_completes(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    _, bookmark = await enqueue(db, site.url(f"/flaky/1/{key}"))
    async with serve_app(worker_app(infra, db)):
        job = await eventually(lambda: job_ended(db))
    assert (job["status"], job["attempts"]) == ("completed", 2)
    assert site.hits[f"/flaky/1/{key}"] == 2
    failed = await db.events("enrichment.failed", clientBookmarkId=bookmark)
    assert [(e["status"], e["errorCode"]) for e in failed] == [("retrying", "upstream-5xx")]
    assert len(await db.events("enrichment.completed", clientBookmarkId=bookmark)) == 1


async def test_third_failure_is_final(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    user, bookmark = await enqueue(db, site.url(f"/status/503/{key}"))
    async with serve_app(worker_app(infra, db)):
        job = await eventually(lambda: job_ended(db))
    assert (job["status"], job["error_code"], job["attempts"]) == ("failed", "upstream-5xx", 3)
    assert site.hits[f"/status/503/{key}"] == 3
    events = await db.events("enrichment.failed", clientBookmarkId=bookmark)
    assert [(e["status"], e["errorCode"]) for e in events] == [
        ("retrying", "upstream-5xx"),
        ("retrying", "upstream-5xx"),
        ("failed", "upstream-5xx"),
    ]
    view = await service.enrichment_status(
        sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, is_pro=False
    )
    assert (view.status, view.error_code) == ("failed", "upstream-5xx")


async def test_retry_is_a_scheduled_row(infra: Any, db: Db, site: Site) -> None:
    """With the documented 60 s delay the job waits as a row; no worker sleeps on it."""
    key = uuid.uuid4().hex[:8]
    await enqueue(db, site.url(f"/flaky/1/{key}"))
    async with serve_app(worker_app(infra, db, retry_delays_seconds=(60.0, 300.0))):
        job = await eventually(lambda: _retrying(db))
    assert job["attempts"] == 1 and job["error_code"] == "upstream-5xx"
    assert job["worker_id"] is None and job["lease_until"] is None
    delay = await db.scalar("SELECT EXTRACT(EPOCH FROM next_attempt_at - updated_at) FROM jobs")
    assert float(delay) == pytest.approx(60.0, abs=0.01)


async def test_one_idle_slot_polls_and_a_poll_that_finds_work_wakes_the_others(
    infra: Any, db: Db, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Due work that sent no notification (a retry that came due) is found by polling; one idle slot at a time
    polls, and when it finds a job the other slots look too instead of waiting for the next notification."""
    claims = CallCount(monkeypatch, service, "claim_job")
    keys = [uuid.uuid4().hex[:8] for _ in range(2)]
    for key in keys:  # both pages hang on their first request, so each holds the slot that took it
        await enqueue(db, site.url(f"/slow-once/{key}"))
    await db.execute("UPDATE jobs SET next_attempt_at = now() + interval '2 seconds'")  # due later, silently
    async with serve_app(worker_app(infra, db, worker_concurrency=4, worker_poll_seconds=0.2)):
        await asyncio.sleep(1.0)
        idle_claims = claims.calls  # four slots' first look, then one slot every 0.2 s (four would be ~24)
        for key in keys:
            await asyncio.wait_for(site.slow_event(key).wait(), timeout=10)
    assert 4 + 2 <= idle_claims <= 4 + 8


async def _retrying(db: Db) -> Any:
    job = await the_job(db)
    return job if job["status"] == "retrying" else None


async def test_blocked_host_fails_immediately(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    _, bookmark = await enqueue(db, site.url(f"/article/{key}"))
    async with serve_app(worker_app(infra, db, allow_private_networks=False)):
        job = await eventually(lambda: job_ended(db))
    assert (job["status"], job["error_code"], job["attempts"]) == ("failed", "blocked-host", 1)
    assert site.hits[f"/article/{key}"] == 0  # never connected
    events = await db.events("enrichment.failed", clientBookmarkId=bookmark)
    assert [(e["status"], e["errorCode"]) for e in events] == [("failed", "blocked-host")]


async def test_lease_expiry_is_a_crash_not_an_attempt_at_the_site(infra: Any, db: Db, site: Site) -> None:
    """A job whose worker vanished during its third attempt is retaken, not failed: the site never failed."""
    _, bookmark = await enqueue(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"))
    await db.execute(
        "UPDATE jobs SET status = 'processing', attempts = 3, worker_id = 'gone', "
        "lease_until = now() - interval '1 second', next_attempt_at = now() - interval '1 second'"
    )
    async with serve_app(worker_app(infra, db)):
        job = await eventually(lambda: job_ended(db))
    assert (job["status"], job["attempts"], job["crashes"]) == ("completed", 4, 1)
    assert await db.events("enrichment.failed", clientBookmarkId=bookmark) == []


async def test_the_last_allowed_crash_fails_the_job_as_worker_crashed(infra: Any, db: Db, site: Site) -> None:
    _, bookmark = await enqueue(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"))
    await db.execute(
        "UPDATE jobs SET status = 'processing', attempts = 3, crashes = 2, worker_id = 'gone', "
        "lease_until = now() - interval '1 second', next_attempt_at = now() - interval '1 second'"
    )
    async with serve_app(worker_app(infra, db, max_worker_crashes=3)):
        job = await eventually(lambda: job_ended(db))
    assert (job["status"], job["error_code"], job["crashes"]) == ("failed", "worker-crashed", 3)
    events = await db.events("enrichment.failed", clientBookmarkId=bookmark)
    assert [(e["status"], e["errorCode"]) for e in events] == [("failed", "worker-crashed")]


# --- crash safety ----------------------------------------------------------------------------------------


class WorkerProcess:
    """A real ``python -m enrichment.worker`` child."""

    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log = log

    @classmethod
    async def start(cls, infra: Any, db: Db, log: Path, **extra: str) -> WorkerProcess:
        env = {
            **os.environ,
            "DATABASE_URL_ENRICHMENT": db.url,
            "KAFKA_BOOTSTRAP_SERVERS": infra.kafka_bootstrap,
            "ENRICHMENT_ALLOW_PRIVATE_NETWORKS": "true",
            "ENRICHMENT_BROWSER": "off",
            "ENRICHMENT_JOB_LEASE_SECONDS": "2",
            "ENRICHMENT_WORKER_POLL_SECONDS": "0.2",
            "ENRICHMENT_WORKER_CONCURRENCY": "2",
            "ENRICHMENT_WORKER_PORT": str(free_port()),
            "ENRICHMENT_FETCH_TIMEOUT_SECONDS": "120",
            "OPENAI_API_KEY": "",
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
        handle = log.open("wb")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "enrichment.worker", env=env, stdout=handle, stderr=asyncio.subprocess.STDOUT
        )
        handle.close()
        return cls(proc, log)

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(sig)
        return await asyncio.wait_for(self.proc.wait(), 60)

    def shut_down_cleanly(self, code: int) -> bool:
        # uvicorn re-raises the SIGTERM it handled once shutdown is complete.
        return code in (0, -signal.SIGTERM) and "Application shutdown complete" in self.log.read_text()


async def test_job_of_a_killed_worker_is_completed_by_another(infra: Any, db: Db, site: Site, tmp_path: Path) -> None:
    key = uuid.uuid4().hex[:8]
    _, bookmark = await enqueue(db, site.url(f"/slow-once/{key}"))

    first = await WorkerProcess.start(infra, db, tmp_path / "first.log")
    try:
        await eventually(lambda: _event_set(site, key), timeout=60)
        claimed = await the_job(db)
        assert claimed["status"] == "processing" and claimed["worker_id"]
    finally:
        code = await first.stop(signal.SIGKILL)
    assert code == -signal.SIGKILL
    orphaned = await the_job(db)
    assert orphaned["status"] == "processing"  # nobody cleaned up: the process died mid-attempt
    assert orphaned["worker_id"] == claimed["worker_id"]

    second = await WorkerProcess.start(infra, db, tmp_path / "second.log")
    try:
        job = await eventually(lambda: job_ended(db), timeout=60)
    finally:
        assert second.shut_down_cleanly(await second.stop()), (tmp_path / "second.log").read_text()[-3000:]
    assert job["status"] == "completed", (tmp_path / "second.log").read_text()[-3000:]
    assert job["attempts"] == 2
    assert job["worker_id"] is None
    assert await db.scalar("SELECT count(*) FROM jobs WHERE status = 'processing'") == 0
    assert site.hits[f"/slow-once/{key}"] == 2
    assert len(await db.events("enrichment.completed", clientBookmarkId=bookmark)) == 1


async def _event_set(site: Site, key: str) -> bool:
    return site.slow_event(key).is_set()


async def test_graceful_shutdown_hands_the_attempt_back(infra: Any, db: Db, site: Site, tmp_path: Path) -> None:
    key = uuid.uuid4().hex[:8]
    await enqueue(db, site.url(f"/slow-once/{key}"))
    worker = await WorkerProcess.start(infra, db, tmp_path / "worker.log")
    try:
        await eventually(lambda: _event_set(site, key), timeout=60)
    finally:
        assert worker.shut_down_cleanly(await worker.stop()), (tmp_path / "worker.log").read_text()[-3000:]
    job = await the_job(db)
    assert (job["status"], job["attempts"], job["worker_id"]) == ("pending", 0, None)


async def test_three_workers_killed_in_a_row_do_not_fail_the_job(
    infra: Any, db: Db, site: Site, tmp_path: Path
) -> None:
    """Three real worker processes SIGKILLed mid-attempt, one after the other (lease expiries): with the
    default 3 attempts per site the old rule failed the job; crashes are counted apart and it completes."""
    key = uuid.uuid4().hex[:8]
    path = f"/hang/3/{key}"
    _, bookmark = await enqueue(db, site.url(path))
    for round_ in range(1, 4):
        worker = await WorkerProcess.start(infra, db, tmp_path / f"worker-{round_}.log")
        try:
            await eventually(lambda n=round_: _hits_reached(site, path, n), timeout=90)
        finally:
            assert await worker.stop(signal.SIGKILL) == -signal.SIGKILL
    last = await WorkerProcess.start(infra, db, tmp_path / "worker-last.log")
    try:
        job = await eventually(lambda: job_ended(db), timeout=90)
    finally:
        await last.stop()
    assert (job["status"], job["crashes"]) == ("completed", 3), (tmp_path / "worker-last.log").read_text()[-3000:]
    assert await db.events("enrichment.failed", clientBookmarkId=bookmark) == []
    assert len(await db.events("enrichment.completed", clientBookmarkId=bookmark)) == 1


async def _hits_reached(site: Site, path: str, count: int) -> bool:
    return site.hits[path] >= count


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium on this machine")
async def test_worker_killed_while_chromium_renders_leaves_no_browser_and_no_failed_job(
    infra: Any, db: Db, site: Site, tmp_path: Path
) -> None:
    key = uuid.uuid4().hex[:8]
    path = f"/render-hang/{key}"
    _, bookmark = await enqueue(db, site.url(path))
    first = await WorkerProcess.start(infra, db, tmp_path / "first.log", ENRICHMENT_BROWSER="required")
    try:
        await eventually(lambda: _hits_reached(site, f"{path}#browser", 1), timeout=120)
        browsers = [p for p in psutil.Process(first.proc.pid).children(recursive=True) if "chrom" in p.name().lower()]
        assert browsers, "Chromium was not rendering under the worker"
    finally:
        assert await first.stop(signal.SIGKILL) == -signal.SIGKILL
    # Chromium goes with its worker (Playwright's driver loses its pipe and takes the browser down).
    await eventually(lambda: _all_gone(browsers), timeout=60)

    second = await WorkerProcess.start(infra, db, tmp_path / "second.log", ENRICHMENT_BROWSER="required")
    try:
        job = await eventually(lambda: job_ended(db), timeout=120)
    finally:
        await second.stop()
    assert (job["status"], job["crashes"]) == ("completed", 1), (tmp_path / "second.log").read_text()[-3000:]
    assert await db.events("enrichment.failed", clientBookmarkId=bookmark) == []


async def _all_gone(processes: list[psutil.Process]) -> bool:
    def gone(p: psutil.Process) -> bool:
        try:
            return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    return all(gone(p) for p in processes)


# --- a database that stops answering -----------------------------------------------------------------------


@contextlib.contextmanager
def _postgres_stopped(infra: Any) -> Iterator[None]:
    """SIGSTOP the stack's postmaster and every backend (nothing closed); SIGCONT on the way out."""
    postmaster = int((Path(infra.postgres.data_dir) / "postmaster.pid").read_text().split("\n", 1)[0])
    pids = [postmaster, *(c.pid for c in psutil.Process(postmaster).children(recursive=True))]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in reversed(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


async def test_an_attempt_that_ends_while_the_database_hangs_is_recorded_once_afterwards(
    infra: Any, db: Db, site: Site
) -> None:
    key = uuid.uuid4().hex[:8]
    _, bookmark = await enqueue(db, site.url(f"/held/{key}"))
    async with serve_app(worker_app(infra, db, worker_poll_seconds=0.2)):
        await eventually(lambda: _event_set(site, key), timeout=60)
        with _postgres_stopped(infra):
            site.release_event(key).set()  # the attempt ends now; its outcome cannot be written yet
            await asyncio.sleep(6)  # longer than every database deadline: the first writes time out
        job = await eventually(lambda: job_ended(db), timeout=120)
    assert (job["status"], job["attempts"], job["crashes"]) == ("completed", 1, 0)
    assert site.hits[f"/held/{key}"] == 1
    assert len(await db.events("enrichment.completed", clientBookmarkId=bookmark)) == 1


# --- the page's thumbnail -----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["html", "svg", "huge"])
async def test_a_thumbnail_that_is_not_a_bounded_raster_image_is_dropped(
    infra: Any, db: Db, site: Site, variant: str
) -> None:
    key = uuid.uuid4().hex[:8]
    url = site.url(f"/with-image/{variant}/{key}")
    await enqueue(db, url)

    async with serve_app(worker_app(infra, db)):
        job = await eventually(lambda: job_ended(db))

    assert job["status"] == "completed"
    assert site.hits[f"/image/{variant}/{key}"] == 1
    result = (await db.one("SELECT result FROM results_cache WHERE normalized_url = :n", n=url))["result"]
    assert result["title"] == f"Sourdough guide {key}"
    assert result["thumbnailUrl"] is None
    kinds = {r["kind"] for r in await db.rows("SELECT kind FROM snapshots WHERE normalized_url = :n", n=url)}
    assert "thumbnail" not in kinds
