"""The outbox relay publishes auth's events to the real broker, as the shared contracts describe them."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy import text

from common.events import UserUpdated, parse_event


async def test_a_new_user_is_announced_on_user_updated(api: Any, consume: Any) -> None:
    session = await api.anonymous()
    user_id = session["user"]["id"]

    record, payload = await consume("user.updated", lambda e: e.get("userId") == user_id)

    event = parse_event(record.value)
    assert isinstance(event, UserUpdated)
    assert (event.isAnonymous, event.isPro, event.useAi) == (True, False, False)
    assert record.key == user_id.encode()
    assert record.topic == "user.updated"
    assert dict(record.headers or ()).get("traceparent"), "trace context travels with the event"


async def test_published_outbox_rows_are_marked(api: Any, consume: Any) -> None:
    session = await api.anonymous()
    user_id = session["user"]["id"]
    await consume("user.updated", lambda e: e.get("userId") == user_id)

    published_at = None
    # The relay marks a row after the broker acknowledged it, which is just after the consumer saw it.
    for _ in range(200):
        async with api.db.connect() as conn:
            published_at = (
                await conn.execute(
                    text("SELECT published_at FROM outbox WHERE key = :k AND topic = 'user.updated'"), {"k": user_id}
                )
            ).scalar_one()
        if published_at is not None:
            break
        await asyncio.sleep(0.05)
    assert published_at is not None


async def test_events_of_one_user_arrive_in_the_order_of_their_changes(api: Any, consume: Any) -> None:
    session = await api.anonymous()
    user_id = session["user"]["id"]
    headers = api.bearer(session["accessToken"])
    for use_ai in (True, False, True):
        await api.client.patch("/v1/me/settings", json={"useAi": use_ai}, headers=headers)
    marker = str(uuid.uuid4())
    await api.sign_in_a(api.id_token_a(marker), access=session["accessToken"], link=True)

    seen: list[tuple[bool, bool]] = []

    def collect(event: dict[str, Any]) -> bool:
        if event.get("userId") == user_id:
            seen.append((event["isAnonymous"], event["useAi"]))
        return len(seen) == 5

    await consume("user.updated", collect)

    assert seen == [(True, False), (True, True), (True, False), (True, True), (False, True)]


async def test_a_user_created_by_an_identity_provider_is_announced_as_not_anonymous(api: Any, consume: Any) -> None:
    session = (await api.sign_in_b(api.id_token_b(email="r@privaterelay.appleid.com"))).json()
    user_id = session["user"]["id"]

    _, event = await consume("user.updated", lambda e: e.get("userId") == user_id)

    assert (event["isAnonymous"], event["isPro"], event["useAi"]) == (False, False, False)
