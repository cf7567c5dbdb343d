"""Link health checks (docs/api-guide.md, section 15) against real PostgreSQL and a local site whose
answers change over time.

The checker runs in-process, step by step (``LinkChecker.check_due``), on a clock the tests move: a day
passes in a statement. Host names are the resolver's (``<name>.test`` → 127.0.0.1), so each test picks
its hosts, and a host can stop resolving; the address policy allows loopback only, so a redirect to a
private address is refused like in production.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from enrichment_support import Api, AuthUsers, CallCount, Db, MutableClock, enrichment_settings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from devstack.testing import eventually, serve_app
from enrichment.domain.links import LinkPolicy
from enrichment.fetch import IPAddress, SafeFetcher
from enrichment.links import service as link_service
from enrichment.worker.app import create_worker_app
from enrichment.worker.links import LinkCheckConfig, LinkChecker

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
POLICY = LinkPolicy(interval=timedelta(days=30), retry=timedelta(hours=24))
MONTH = timedelta(days=31)


def link_config(**changes: Any) -> LinkCheckConfig:
    """The checker's settings in these tests. A rate so high that its slot rounds to no time: only the
    tests of the rate meet it. The timeout is generous: a loaded machine must not turn a probe of the
    local site into a timeout (the test of timeouts shortens it)."""
    settings: dict[str, Any] = {"policy": POLICY, "rate_per_second": 1e9, "timeout_seconds": 10.0}
    return LinkCheckConfig(**(settings | changes))


# --- the outside world ----------------------------------------------------------------------------------


@dataclass
class LinkSite:
    port: int = 0
    status: dict[str, int] = field(default_factory=dict)  # /s/{key} answers this (200 unless set)
    methods: list[tuple[str, str]] = field(default_factory=list)
    dead_hosts: set[str] = field(default_factory=set)

    def url(self, host: str, path: str) -> str:
        return f"http://{host}.test:{self.port}{path}"


def build_link_site(site: LinkSite) -> Starlette:
    async def changing(request: Request) -> Response:
        site.methods.append((request.method, request.url.path))
        return PlainTextResponse("page", status_code=site.status.get(request.path_params["key"], 200))

    async def redirect(request: Request) -> Response:
        site.methods.append((request.method, request.url.path))
        code, target = request.path_params["code"], request.path_params["target"]
        return Response(status_code=code, headers={"Location": f"/{target}"})

    async def away(request: Request) -> Response:
        # A redirect to another host of the test site.
        return Response(status_code=301, headers={"Location": site.url(request.path_params["host"], "/s/new")})

    async def head_refused(request: Request) -> Response:
        # HEAD is refused; GET ignores Range and streams without end.
        site.methods.append((request.method, request.url.path))
        if request.method == "HEAD":
            return PlainTextResponse("", status_code=405)

        async def endless() -> AsyncIterator[bytes]:
            while True:
                yield b"x" * 8192
                await asyncio.sleep(0)

        return StreamingResponse(endless(), media_type="text/html")

    async def hang(request: Request) -> Response:
        while not await request.is_disconnected():
            await asyncio.sleep(0.05)
        return PlainTextResponse("gone away", status_code=499)

    async def loop(request: Request) -> Response:
        other = "b" if request.path_params["name"] == "a" else "a"
        return Response(status_code=301, headers={"Location": f"/loop/{other}"})

    async def private_redirect(request: Request) -> Response:
        return Response(status_code=302, headers={"Location": "http://10.1.2.3/admin"})

    async def bot_wall(request: Request) -> Response:
        return PlainTextResponse("challenge", status_code=503, headers={"cf-mitigated": "challenge"})

    return Starlette(
        routes=[
            Route("/s/{key}", changing, methods=["GET", "HEAD"]),
            Route("/r/{code:int}/{target:path}", redirect, methods=["GET", "HEAD"]),
            Route("/away/{host}", away, methods=["GET", "HEAD"]),
            Route("/head-refused", head_refused, methods=["GET", "HEAD"]),
            Route("/hang", hang, methods=["GET", "HEAD"]),
            Route("/loop/{name}", loop, methods=["GET", "HEAD"]),
            Route("/private-redirect", private_redirect, methods=["GET", "HEAD"]),
            Route("/bot-wall", bot_wall, methods=["GET", "HEAD"]),
        ]
    )


@pytest.fixture(scope="module")
async def link_site() -> AsyncIterator[LinkSite]:
    site = LinkSite()
    async with serve_app(build_link_site(site)) as base_url:
        site.port = httpx.URL(base_url).port or 0
        yield site


@pytest.fixture(scope="module")
async def links_db(infra: Any) -> AsyncIterator[Db]:
    database = Db(infra.fresh_database("enrichment"))
    yield database
    await database.close()


@pytest.fixture
async def db(links_db: Db) -> Db:
    tables = await links_db.rows(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
    )
    await links_db.execute(f"TRUNCATE {', '.join(r['tablename'] for r in tables)} RESTART IDENTITY CASCADE")
    return links_db


def only_loopback(address: IPAddress) -> bool:
    return address != ipaddress.ip_address("127.0.0.1")


@pytest.fixture
async def checker(db: Db, link_site: LinkSite) -> AsyncIterator[Checker]:
    link_site.status.clear()
    link_site.methods.clear()
    link_site.dead_hosts.clear()

    async def resolve(host: str, port: int) -> list[str]:
        if host.endswith(".test") and host not in link_site.dead_hosts:
            return ["127.0.0.1"]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    clock = MutableClock()
    clock.set(T0)
    async with SafeFetcher(
        timeout_seconds=5, user_agent="link-tests/1.0", resolver=resolve, address_policy=only_loopback
    ) as fetcher:
        yield Checker(
            db,
            clock,
            LinkChecker(
                sessions=db.sessions,
                fetcher=fetcher,
                clock=clock,
                config=link_config(),
                worker_id="link-tests",
                jitter=lambda: 0.5,
            ),
        )


@dataclass
class Checker:
    db: Db
    clock: MutableClock
    loop: LinkChecker

    async def save(self, url: str, user: uuid.UUID | None = None, bookmark: str | None = None) -> tuple[uuid.UUID, str]:
        """A live bookmark in enrichment's projection (as bookmark.saved would write it), scheduled at T0:
        with jitter 0.5 its first check is due mid-interval."""
        user = user or uuid.uuid4()
        bookmark = bookmark or f"bm-{uuid.uuid4().hex[:10]}"
        await self.db.execute(
            "INSERT INTO bookmark_urls (user_id, client_bookmark_id, normalized_url, deleted, position) "
            "VALUES (:u, :b, :url, false, :t)",
            u=user,
            b=bookmark,
            url=url,
            t=T0,
        )
        self.clock.set(T0)
        await self.loop.schedule()
        return user, bookmark

    async def run_at(self, when: datetime) -> int:
        """Move the clock to ``when``, schedule new URLs and run every check due then."""
        self.clock.set(when)
        await self.loop.schedule()
        return await self.loop.check_due()

    async def check(self, url: str) -> Any:
        return await self.db.one("SELECT * FROM link_checks WHERE normalized_url = :u", u=url)

    async def reports(self, bookmark: str) -> list[tuple[str, str | None]]:
        events = await self.db.events("link.checked", clientBookmarkId=bookmark)
        return [(e["linkStatus"], e.get("movedTo")) for e in events]


# --- statuses -------------------------------------------------------------------------------------------


async def test_a_new_bookmark_is_first_checked_within_the_interval_and_ok(
    checker: Checker, link_site: LinkSite
) -> None:
    url = link_site.url("okay", "/s/a")
    user, bookmark = await checker.save(url)
    assert await checker.run_at(T0) == 0  # scheduled, not due yet: jitter 0.5 puts it mid-interval
    assert (await checker.check(url))["due_at"] == T0 + POLICY.interval / 2
    assert await checker.run_at(T0 + MONTH) == 1
    assert await checker.reports(bookmark) == [("ok", None)]
    event = (await checker.db.events("link.checked"))[0]
    assert event["userId"] == str(user) and event["normalizedUrl"] == url
    assert event["checkedAt"].startswith("2030-02-01T09:00:00")
    row = await checker.check(url)
    assert row["status"] == "ok" and row["last_result"] == "http-200" and row["lease_until"] is None
    assert row["due_at"] == T0 + MONTH + POLICY.interval  # jitter 0.5: the interval exactly
    assert link_site.methods == [("HEAD", "/s/a")]  # HEAD only: nothing read


async def test_404_then_200_stays_ok(checker: Checker, link_site: LinkSite) -> None:
    url = link_site.url("flaky", "/s/flaky")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    link_site.status["flaky"] = 404
    await checker.run_at(T0 + 2 * MONTH)
    assert (await checker.check(url))["failing_since"] == T0 + 2 * MONTH
    link_site.status["flaky"] = 200
    await checker.run_at(T0 + 2 * MONTH + timedelta(hours=24))
    assert await checker.reports(bookmark) == [("ok", None), ("ok", None)]
    row = await checker.check(url)
    assert row["status"] == "ok" and row["failing_since"] is None


@pytest.mark.parametrize("code", [404, 410])
async def test_missing_twice_24_hours_apart_is_gone(checker: Checker, link_site: LinkSite, code: int) -> None:
    key = f"missing{code}"
    link_site.status[key] = code
    url = link_site.url(key, f"/s/{key}")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == []  # one failure never marks a link gone
    assert (await checker.check(url))["due_at"] == T0 + MONTH + timedelta(hours=24)
    assert await checker.run_at(T0 + MONTH + timedelta(hours=23)) == 0  # not due before the retry
    assert await checker.run_at(T0 + MONTH + timedelta(hours=24)) == 1
    assert await checker.reports(bookmark) == [("gone", None)]
    # The small GET confirmed what HEAD said, once per check.
    assert link_site.methods == [("HEAD", f"/s/{key}"), ("GET", f"/s/{key}")] * 2


@pytest.mark.parametrize("code", [301, 308])
async def test_permanent_redirect_chains_are_moved(checker: Checker, link_site: LinkSite, code: int) -> None:
    url = link_site.url(f"perm{code}", f"/r/{code}/r/{code}/s/final")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == [("moved", link_site.url(f"perm{code}", "/s/final"))]
    assert (await checker.check(url))["moved_to"] == link_site.url(f"perm{code}", "/s/final")


async def test_a_move_to_another_host_is_checked_there(checker: Checker, link_site: LinkSite) -> None:
    url = link_site.url("old-home", "/away/new-home")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == [("moved", link_site.url("new-home", "/s/new"))]


async def test_a_temporary_redirect_is_ok(checker: Checker, link_site: LinkSite) -> None:
    url = link_site.url("temp", "/r/302/s/elsewhere")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == [("ok", None)]


@pytest.mark.parametrize("code", [403, 429, 401])
async def test_refusals_are_blocked_at_once(checker: Checker, link_site: LinkSite, code: int) -> None:
    key = f"refused{code}"
    link_site.status[key] = code
    _, bookmark = await checker.save(link_site.url(key, f"/s/{key}"))
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == [("blocked", None)]


async def test_a_bot_wall_is_blocked(checker: Checker, link_site: LinkSite) -> None:
    _, bookmark = await checker.save(link_site.url("walled", "/bot-wall"))
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == [("blocked", None)]


async def test_server_errors_twice_are_unreachable(checker: Checker, link_site: LinkSite) -> None:
    link_site.status["down"] = 503
    url = link_site.url("down", "/s/down")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    await checker.run_at(T0 + MONTH + timedelta(hours=24))
    assert await checker.reports(bookmark) == [("unreachable", None)]
    assert (await checker.check(url))["last_result"] == "http-503"


async def test_a_host_that_stops_resolving_is_gone(checker: Checker, link_site: LinkSite) -> None:
    url = link_site.url("vanishing", "/s/v")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    link_site.dead_hosts.add("vanishing.test")
    await checker.run_at(T0 + 2 * MONTH)
    await checker.run_at(T0 + 2 * MONTH + timedelta(hours=24))
    assert await checker.reports(bookmark) == [("ok", None), ("gone", None)]
    assert (await checker.check(url))["last_result"] == "dns"


async def test_a_timeout_twice_is_unreachable(checker: Checker, link_site: LinkSite) -> None:
    checker.loop.config = link_config(timeout_seconds=0.5)
    url = link_site.url("slow", "/hang")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    row = await checker.check(url)
    assert row["last_result"] == "timeout" and row["lease_until"] is None
    await checker.run_at(T0 + MONTH + timedelta(hours=24))
    assert await checker.reports(bookmark) == [("unreachable", None)]


async def test_redirect_loops_and_endless_chains_are_unreachable(checker: Checker, link_site: LinkSite) -> None:
    looping = link_site.url("loop", "/loop/a")
    endless = link_site.url("chain", "/r/301/r/301/r/301/r/301/r/301/r/301/s/x")  # 6 redirects, 5 allowed
    _, loop_bookmark = await checker.save(looping)
    _, chain_bookmark = await checker.save(endless)
    await checker.run_at(T0 + MONTH)
    assert (await checker.check(looping))["last_result"] == "redirect-loop"
    assert (await checker.check(endless))["last_result"] == "too-many-redirects"
    await checker.run_at(T0 + MONTH + timedelta(hours=24))
    assert await checker.reports(loop_bookmark) == [("unreachable", None)]
    assert await checker.reports(chain_bookmark) == [("unreachable", None)]
    assert await checker.db.scalar("SELECT count(*) FROM link_checks WHERE lease_until IS NOT NULL") == 0


async def test_head_refused_reads_a_few_kib_of_an_endless_body(checker: Checker, link_site: LinkSite) -> None:
    url = link_site.url("headless", "/head-refused")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == [("ok", None)]
    assert link_site.methods == [("HEAD", "/head-refused"), ("GET", "/head-refused")]


async def test_a_private_address_behind_a_redirect_is_blocked_and_releases_the_check(
    checker: Checker, link_site: LinkSite
) -> None:
    url = link_site.url("sneaky", "/private-redirect")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == [("blocked", None)]
    row = await checker.check(url)
    assert row["last_result"] == "blocked-address" and row["lease_until"] is None and row["worker_id"] is None


# --- one check per URL, for every user --------------------------------------------------------------------


async def test_one_check_serves_every_live_bookmark_of_the_url(checker: Checker, link_site: LinkSite) -> None:
    url = link_site.url("shared", "/s/shared")
    first, a = await checker.save(url)
    _, b = await checker.save(url)
    _, c = await checker.save(url, user=first)
    _, deleted = await checker.save(url)
    await checker.db.execute("UPDATE bookmark_urls SET deleted = true WHERE client_bookmark_id = :b", b=deleted)
    await checker.run_at(T0 + MONTH)
    assert link_site.methods == [("HEAD", "/s/shared")]
    for bookmark in (a, b, c):
        assert await checker.reports(bookmark) == [("ok", None)]
    assert await checker.reports(deleted) == []
    assert await checker.db.scalar("SELECT count(*) FROM link_checks") == 1


async def test_a_url_nobody_keeps_loses_its_check(checker: Checker, link_site: LinkSite) -> None:
    url = link_site.url("forgotten", "/s/f")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0)
    await checker.db.execute("UPDATE bookmark_urls SET deleted = true")
    await checker.run_at(T0 + MONTH)
    assert await checker.reports(bookmark) == []
    assert await checker.db.scalar("SELECT count(*) FROM link_checks") == 0


# --- politeness and leases ------------------------------------------------------------------------------------


async def test_one_host_is_asked_once_at_a_time_two_seconds_apart(checker: Checker, link_site: LinkSite) -> None:
    for key in ("p1", "p2", "p3"):
        await checker.save(link_site.url("polite", f"/s/{key}"))
    await checker.run_at(T0)
    start = T0 + MONTH
    assert await checker.run_at(start) == 1
    assert await checker.run_at(start + timedelta(seconds=1.9)) == 0
    assert await checker.run_at(start + timedelta(seconds=2)) == 1
    assert await checker.run_at(start + timedelta(seconds=4)) == 1
    assert len(link_site.methods) == 3


async def test_the_global_rate_spaces_checks_of_different_hosts(checker: Checker, link_site: LinkSite) -> None:
    checker.loop.config = link_config(rate_per_second=0.5)
    for host in ("h1", "h2", "h3"):
        await checker.save(link_site.url(host, "/s/r"))
    start = T0 + MONTH
    assert await checker.run_at(start) == 1
    assert await checker.run_at(start + timedelta(seconds=1)) == 0
    assert await checker.run_at(start + timedelta(seconds=2)) == 1
    assert await checker.run_at(start + timedelta(seconds=4)) == 1


async def test_an_abandoned_lease_is_claimed_again_when_it_expires(checker: Checker, link_site: LinkSite) -> None:
    url = link_site.url("crashy", "/s/c")
    _, bookmark = await checker.save(url)
    await checker.run_at(T0)
    # A checker claimed it and died: the row is leased for two minutes.
    await checker.db.execute(
        "UPDATE link_checks SET due_at = :until, lease_until = :until, worker_id = 'dead', claims = 1",
        until=T0 + MONTH + timedelta(minutes=2),
    )
    assert await checker.run_at(T0 + MONTH) == 0
    assert await checker.run_at(T0 + MONTH + timedelta(minutes=2)) == 1
    assert await checker.reports(bookmark) == [("ok", None)]


async def test_one_idle_slot_polls_and_a_poll_that_finds_due_checks_wakes_the_others(
    checker: Checker, link_site: LinkSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing due, one of the four slots polls every ``poll_seconds`` (four would ask the database
    four times as often for the same nothing); checks that come due are found by that poll and run."""
    claims = CallCount(monkeypatch, link_service, "claim")
    checker.loop.config = link_config(concurrency=4, poll_seconds=0.2)
    urls = [link_site.url(f"idle{i}", "/s/i") for i in range(3)]
    for url in urls:
        await checker.save(url)  # first checks due mid-interval
    checker.clock.set(T0 + timedelta(days=1))
    running = asyncio.create_task(checker.loop.run())
    try:
        await asyncio.sleep(1.0)
        idle_claims = claims.calls  # four slots' first look, then one slot every 0.2 s (four would be ~24)
        checker.clock.set(T0 + MONTH)

        async def all_checked() -> bool:
            return len(link_site.methods) >= len(urls)

        await eventually(all_checked, timeout=20)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    assert 4 + 2 <= idle_claims <= 4 + 8


# --- check now ------------------------------------------------------------------------------------------------


async def test_check_link_makes_the_users_bookmark_due_now(api: Api, users: AuthUsers) -> None:
    owner, stranger = await users.create(), await users.create()
    url = f"https://check-now-{uuid.uuid4().hex[:8]}.example/page"
    bookmark = f"bm-{uuid.uuid4().hex[:10]}"
    await api.db.execute(
        "INSERT INTO bookmark_urls (user_id, client_bookmark_id, normalized_url, deleted, position) "
        "VALUES (:u, :b, :url, false, now())",
        u=owner.id,
        b=bookmark,
        url=url,
    )
    api.clock.set(T0)
    try:
        path = f"/v1/bookmarks/{bookmark}/check-link"
        accepted = await api.http.post(path, headers=owner.headers)
        assert accepted.status_code == 202 and accepted.json() == {"accepted": True}
        row = await api.db.one("SELECT * FROM link_checks WHERE normalized_url = :u", u=url)
        assert row["due_at"] == T0 and row["host"] == httpx.URL(url).host

        foreign = await api.http.post(path, headers=stranger.headers)
        assert foreign.status_code == 404 and foreign.json()["code"] == "not-found"
        unknown = await api.http.post("/v1/bookmarks/bm-nope/check-link", headers=owner.headers)
        assert unknown.status_code == 404
        assert (await api.http.post(path)).status_code == 401

        for _ in range(9):
            assert (await api.http.post(path, headers=owner.headers)).status_code == 202
        limited = await api.http.post(path, headers=owner.headers)
        assert limited.status_code == 429 and limited.json()["code"] == "rate-limited"
        assert 1 <= int(limited.headers["Retry-After"]) <= 61
        api.clock.set(T0 + timedelta(minutes=1))
        assert (await api.http.post(path, headers=owner.headers)).status_code == 202
    finally:
        api.clock.set(None)


# --- the worker process ---------------------------------------------------------------------------------------


async def test_the_worker_runs_the_link_checker_unless_switched_off(infra: Any, db: Db, link_site: LinkSite) -> None:
    url = f"http://127.0.0.1:{link_site.port}/s/worker"
    await db.execute(
        "INSERT INTO bookmark_urls (user_id, client_bookmark_id, normalized_url, deleted, position) "
        "VALUES (:u, 'bm-worker', :url, false, now())",
        u=uuid.uuid4(),
        url=url,
    )
    off = create_worker_app(enrichment_settings(infra, db.url, auth_url="http://127.0.0.1:9", link_check_enabled=False))
    async with serve_app(off):
        assert not hasattr(off.state, "link_checker")
    assert await db.scalar("SELECT count(*) FROM link_checks") == 0

    # An interval of a tenth of a second: the first check is due at once, on the real clock.
    on = create_worker_app(
        enrichment_settings(infra, db.url, auth_url="http://127.0.0.1:9", link_check_interval_days=1e-6)
    )
    async with serve_app(on):

        async def reported() -> list[dict[str, Any]]:
            return await db.events("link.checked", clientBookmarkId="bm-worker")

        events = await eventually(reported, timeout=30)
        assert events[0]["linkStatus"] == "ok" and events[0]["normalizedUrl"] == url
