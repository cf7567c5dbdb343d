"""The /v1/events WebSocket and the deny-list, fed by events produced to the real broker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from common.events import BookmarkDeleted, BookmarkSaved, CollectionChanged, UserDeleted, UserMerged

NUDGE = {"type": "bookmarks_changed"}
WAIT = 20.0  # generous: how long something that must arrive may take


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def socket(gw: Any, token: str | None, *, via: str = "header") -> AsyncIterator[ClientConnection]:
    url, headers = gw.ws_url, {}
    if token is not None and via == "header":
        headers = bearer(token)
    elif token is not None:
        url += f"?access_token={token}"
    async with connect(url, additional_headers=headers, proxy=None, open_timeout=WAIT) as ws:
        yield ws


async def nudge(ws: ClientConnection) -> dict[str, Any]:
    message = await asyncio.wait_for(ws.recv(), WAIT)
    parsed: dict[str, Any] = json.loads(message)
    return parsed


async def close_of(ws: ClientConnection) -> tuple[int, str]:
    """Wait for the server to close ``ws`` (nudges before the close are skipped)."""
    try:
        async with asyncio.timeout(WAIT):
            while True:
                await ws.recv()
    except ConnectionClosed as closed:
        assert closed.rcvd is not None, "closed without a close frame"
        return closed.rcvd.code, closed.rcvd.reason
    raise AssertionError("unreachable")


def saved(user: uuid.UUID, bookmark: str = "b1") -> BookmarkSaved:
    return BookmarkSaved(
        userId=user,
        clientBookmarkId=bookmark,
        url="https://example.com/a",
        normalizedUrl="https://example.com/a",
        domain="example.com",
        updatedAt=datetime.now(UTC),
    )


def sent_total() -> float:
    return REGISTRY.get_sample_value("gateway_nudges_sent_total") or 0.0


async def until(predicate: Any) -> None:
    async with asyncio.timeout(WAIT):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_header_and_query_auth_both_receive_nudges(gateway: Any, tokens: Any, publish: Any) -> None:
    user = uuid.uuid4()
    async with socket(gateway, tokens.mint(user)) as by_header, socket(gateway, tokens.mint(user), via="query") as q:
        await publish(saved(user))
        assert await nudge(by_header) == NUDGE
        assert await nudge(q) == NUDGE
        await publish(BookmarkDeleted(userId=user, clientBookmarkId="b1", deletedAt=datetime.now(UTC)))
        assert await nudge(by_header) == NUDGE
        assert await nudge(q) == NUDGE


async def test_collection_changes_nudge_like_bookmark_changes(gateway: Any, tokens: Any, publish: Any) -> None:
    user = uuid.uuid4()
    async with socket(gateway, tokens.mint(user)) as ws:
        await publish(CollectionChanged(userId=user, collectionId="c1", updatedAt=datetime.now(UTC)))
        assert await nudge(ws) == NUDGE
        await publish(CollectionChanged(userId=user, collectionId="c1", deleted=True, updatedAt=datetime.now(UTC)))
        assert await nudge(ws) == NUDGE


@pytest.mark.parametrize("case", ["missing", "garbage", "expired", "garbage query", "not bearer"])
async def test_bad_tokens_are_closed_with_4401(gateway: Any, tokens: Any, case: str) -> None:
    url = gateway.ws_url
    headers: dict[str, str] = {}
    if case == "garbage":
        headers = bearer("garbage")
    elif case == "expired":
        headers = bearer(tokens.mint(expires_in=-30))
    elif case == "garbage query":
        url += "?access_token=garbage"
    elif case == "not bearer":
        headers = {"Authorization": "Basic eDp5"}
    async with connect(url, additional_headers=headers, proxy=None, open_timeout=WAIT) as ws:
        assert await close_of(ws) == (4401, "unauthorized")


async def test_non_string_alg_or_kid_in_the_token_header_closes_4401(gateway: Any, jwks_server: Any) -> None:
    hostile = jwks_server.hostile_header_tokens(sub=str(uuid.uuid4()), claims={"jti": uuid.uuid4().hex})
    for name, token in hostile.items():
        for via in ("header", "query"):
            async with socket(gateway, token, via=via) as ws:
                assert await close_of(ws) == (4401, "unauthorized"), (name, via)


async def test_a_users_change_reaches_only_that_users_sockets(gateway: Any, tokens: Any, publish: Any) -> None:
    user, other = uuid.uuid4(), uuid.uuid4()
    async with (
        socket(gateway, tokens.mint(user)) as mine_1,
        socket(gateway, tokens.mint(user)) as mine_2,
        socket(gateway, tokens.mint(other)) as theirs,
    ):
        before = sent_total()
        await publish(saved(user))
        assert await nudge(mine_1) == NUDGE
        assert await nudge(mine_2) == NUDGE
        await until(lambda: gateway.state.hub.idle(user))
        await publish(saved(other))  # a later change of the other user: its nudge must be its first message
        assert await nudge(theirs) == NUDGE
        await until(lambda: gateway.state.hub.idle(other))
        assert sent_total() == before + 3  # two for the user's sockets, one for the other's own change


async def test_a_burst_is_coalesced_and_its_last_event_is_followed_by_a_nudge(
    gateway: Any, tokens: Any, publish: Any
) -> None:
    user = uuid.uuid4()
    tail = gateway.app.state.event_tail
    async with socket(gateway, tokens.mint(user)) as ws:
        before = sent_total()
        results = await asyncio.gather(*(publish(saved(user, f"b{i}")) for i in range(50)))
        last = max(results, key=lambda r: r.offset)  # one user: one partition, in order
        assert await nudge(ws) == NUDGE
        # Once the gateway has handled the last event and has nothing scheduled, waiting or in flight
        # for the user, a nudge has been sent after that event; the client must receive all of them.
        await until(lambda: (tail.position(last.topic, last.partition) or 0) > last.offset)
        await until(lambda: gateway.state.hub.idle(user))
        sent = int(sent_total() - before)
        assert 1 <= sent <= 50
        for _ in range(sent - 1):
            assert await nudge(ws) == NUDGE


async def test_every_replica_nudges_its_own_sockets(
    gateway: Any, start_gateway: Any, tokens: Any, publish: Any
) -> None:
    user = uuid.uuid4()
    async with start_gateway() as replica:
        async with socket(gateway, tokens.mint(user)) as on_first, socket(replica, tokens.mint(user)) as on_second:
            await publish(saved(user))
            assert await nudge(on_first) == NUDGE
            assert await nudge(on_second) == NUDGE


async def test_deleted_users_are_refused_on_every_replica(
    gateway: Any, start_gateway: Any, tokens: Any, publish: Any
) -> None:
    user, bystander = uuid.uuid4(), uuid.uuid4()
    token, other_token = tokens.mint(user), tokens.mint(bystander)
    async with start_gateway() as replica:
        for gw in (gateway, replica):
            assert (await gw.client.get("/v1/bookmarks/delta", headers=bearer(token))).status_code == 200
        async with socket(gateway, token) as first, socket(replica, token) as second:
            await publish(UserDeleted(userId=user))
            assert await close_of(first) == (4401, "account deleted")
            assert await close_of(second) == (4401, "account deleted")
        for gw in (gateway, replica):
            refused = await gw.client.get("/v1/bookmarks/delta", headers=bearer(token))
            assert refused.status_code == 401
            assert refused.json()["code"] == "unauthorized"
            assert (await gw.client.get("/v1/me", headers=bearer(tokens.mint(user)))).status_code == 401
            assert (await gw.client.get("/v1/me", headers=bearer(other_token))).status_code == 200
            async with socket(gw, token) as late:
                assert await close_of(late) == (4401, "unauthorized")


async def test_merged_away_users_are_refused(gateway: Any, tokens: Any, publish: Any) -> None:
    target, source = uuid.uuid4(), uuid.uuid4()
    source_token = tokens.mint(source)
    async with socket(gateway, source_token) as ws:
        await publish(UserMerged(userId=target, sourceUserId=source))
        assert await close_of(ws) == (4401, "account merged")
    assert (await gateway.client.get("/v1/me", headers=bearer(source_token))).status_code == 401
    assert (await gateway.client.get("/v1/me", headers=bearer(tokens.mint(target)))).status_code == 200


async def test_a_restarted_gateway_still_refuses_recently_deleted_users(
    start_gateway: Any, tokens: Any, publish: Any
) -> None:
    user = uuid.uuid4()
    await publish(UserDeleted(userId=user))
    async with start_gateway() as fresh:  # ready only once the deny-list has been rebuilt
        response = await fresh.client.get("/v1/me", headers=bearer(tokens.mint(user)))
    assert response.status_code == 401


async def test_connections_per_user_are_capped(start_gateway: Any, tokens: Any, publish: Any) -> None:
    user, other = uuid.uuid4(), uuid.uuid4()
    async with start_gateway(ws_max_per_user=2) as gw:
        async with socket(gw, tokens.mint(user)) as one, socket(gw, tokens.mint(user)):
            async with socket(gw, tokens.mint(user)) as third:
                assert await close_of(third) == (4429, "too many connections")
            async with socket(gw, tokens.mint(other)) as theirs:
                await publish(saved(other))
                assert await nudge(theirs) == NUDGE
            await one.close()
            await until(lambda: gw.state.hub.connections(user) == 1)
            async with socket(gw, tokens.mint(user)) as again:
                await publish(saved(user))
                assert await nudge(again) == NUDGE


async def test_a_socket_is_closed_when_its_token_expires(gateway: Any, tokens: Any) -> None:
    async with socket(gateway, tokens.mint(expires_in=4)) as ws:
        assert await close_of(ws) == (4401, "token expired")


async def test_websocket_metrics(gateway: Any, tokens: Any) -> None:
    user = uuid.uuid4()
    async with socket(gateway, tokens.mint(user)):
        await until(lambda: gateway.state.hub.connections(user) == 1)
        assert (REGISTRY.get_sample_value("gateway_websocket_connections") or 0) >= 1
    await until(lambda: gateway.state.hub.connections(user) == 0)
    metrics = generate_latest().decode()
    for name in ("gateway_websocket_connections", "gateway_nudge_latency_seconds_bucket", "gateway_nudges_sent_total"):
        assert name in metrics


async def test_nudges_and_denials_resume_after_the_broker_restarts(
    start_gateway: Any, infra: Any, tokens: Any, publish: Any
) -> None:
    user, deleted = uuid.uuid4(), uuid.uuid4()
    async with start_gateway() as gw:
        async with socket(gw, tokens.mint(user)) as ws:
            await publish(saved(user))
            assert await nudge(ws) == NUDGE
            # The embedded broker keeps nothing across a restart: every offset the tails hold is now
            # beyond the end of its partition and must be reset, not waited for.
            await asyncio.to_thread(infra.stop_broker)
            await asyncio.to_thread(infra.start_broker)
            await publish(saved(user))
            assert await nudge(ws) == NUDGE
        await publish(UserDeleted(userId=deleted))
        token = tokens.mint(deleted)
        async with asyncio.timeout(WAIT):
            while (await gw.client.get("/v1/me", headers=bearer(token))).status_code != 401:
                await asyncio.sleep(0.05)


async def test_the_first_socket_shortens_the_tails_wait_at_once(gateway: Any, tokens: Any) -> None:
    """The tail does not wake to look for sockets on a timer; the hub tells it."""
    tail = gateway.app.state.event_tail

    def wait_ms() -> int | None:
        consumer = tail._consumer
        return None if consumer is None else int(consumer._fetcher._fetch_max_wait_ms)

    await until(lambda: wait_ms() in (2000, 8000))  # no socket (an earlier test's ones are gone within a wait)
    async with socket(gateway, tokens.mint(uuid.uuid4())):
        async with asyncio.timeout(0.25):  # the tail's own loop wakes once per 2 s wait, not in time
            while wait_ms() != 25:
                await asyncio.sleep(0.005)


async def test_the_nudge_tail_polls_fast_only_while_someone_could_be_nudged(infra: Any) -> None:
    """Issue 15: the embedded broker holds a fetch for its whole wait, so the wait is both the nudge delay
    and the idle poll rate; the tail shortens it only while the replica holds a socket."""
    from common.outbox import start_with_retry
    from gateway.events.consumers import TopicTail

    sockets: list[object] = []
    tail = TopicTail(
        name="nudges",
        bootstrap=infra.kafka_bootstrap,
        handlers={"bookmark.saved": lambda _: "applied"},
        fetch_max_wait_ms=1000,
        fast_fetch=lambda: bool(sockets),
        fast_fetch_max_wait_ms=25,
    )
    consumer = await start_with_retry(tail._new_consumer, "test tail")
    try:
        assert tail._fetch_wait(consumer) == 1000
        assert consumer._fetcher._fetch_max_wait_ms == 1000  # the attribute aiokafka's fetcher reads
        sockets.append(object())
        assert tail._fetch_wait(consumer) == 25
        assert consumer._fetcher._fetch_max_wait_ms == 25
        sockets.clear()
        assert tail._fetch_wait(consumer) == 1000
    finally:
        # aiokafka's group-less coordinator may surface its own cancelled task when stopped at once.
        with contextlib.suppress(asyncio.CancelledError):
            await consumer.stop()
