"""Broker stopped: the service stays ready and keeps accepting writes, reports the
broker in kafka_broker_reachable instead, and the events written meanwhile reach the broker once it is back."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from prometheus_client import REGISTRY, generate_latest

from devstack.testing import eventually


def _reachable() -> float | None:
    # The app runs in this process; its metrics live in the default registry (served on the metrics port).
    for line in generate_latest(REGISTRY).decode().splitlines():
        if line.startswith('kafka_broker_reachable{service="auth"}'):
            return float(line.rsplit(" ", 1)[1])
    return None


async def test_broker_outage_keeps_the_service_ready_and_writing(
    infra: Any, client: httpx.AsyncClient, consume: Any
) -> None:
    async def ready() -> bool:
        return (await client.get("/readyz")).status_code == 200

    await eventually(ready, timeout=60)  # ready once its topics were found; the broker's outage comes after
    await asyncio.to_thread(infra.stop_broker)
    try:
        ready = await client.get("/readyz")
        assert ready.status_code == 200, ready.text

        async def broker_reported_down() -> bool:
            return _reachable() == 0.0

        await eventually(broker_reported_down, timeout=60)
        written = []
        for _ in range(3):
            response = await client.post("/v1/auth/anonymous")
            assert response.status_code == 200, response.text
            written.append(response.json()["user"]["id"])
        assert (await client.get("/readyz")).status_code == 200
    finally:
        await asyncio.to_thread(infra.start_broker)
    for user_id in written:
        await consume("user.updated", lambda e, u=user_id: e.get("userId") == u, limit_seconds=90)

    async def broker_reported_up() -> bool:
        return _reachable() == 1.0

    await eventually(broker_reported_up, timeout=60)
