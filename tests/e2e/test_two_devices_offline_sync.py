"""Scenario (a): two devices of one idp-a account, one of them offline for a while, converge.

Device 1 queues edits and deletes while "offline" (its writes are collected and replayed later, as a
client does on reconnect); device 2 edits the same bookmarks online meanwhile. After the replay both
sync through delta from their stored positions and must hold exactly what a fresh full sync returns:
the server's last-write-wins state (PUT merges fields, so only the fields both wrote conflict).
"""

from __future__ import annotations

import uuid

import httpx
from e2e_support import Device, sign_in

from devstack.testing import LocalJwksServer


def url(n: int | str) -> str:
    return f"https://example.com/reading/{n}?utm_source=newsletter"


def live_state(device: Device) -> dict[str, dict[str, object]]:
    return {bid: dict(record) for bid, record in device.records.items()}


async def test_offline_device_and_online_device_converge_on_last_write_wins(
    http: httpx.AsyncClient, idp_a: LocalJwksServer
) -> None:
    sub = f"sync-{uuid.uuid4().hex}"
    d1 = await sign_in(http, idp_a, sub, name="Alex Two-Devices")
    d2 = await sign_in(http, idp_a, sub, name="Alex Two-Devices")
    assert d1.user_id == d2.user_id, "two sign-ins with one idp-a identity must reach the same user"
    assert d1.token != d2.token and d1.session["refreshToken"] != d2.session["refreshToken"]
    me = await d2.me()
    assert me["id"] == d1.user_id and me["isAnonymous"] is False and me["displayName"] == "Alex Two-Devices"

    # Both devices start from the same four bookmarks.
    for n in (1, 2, 3, 4):
        created = await d1.put(f"b{n}", {"url": url(n), "title": f"Title {n}"})
        assert created["normalizedUrl"] == f"https://example.com/reading/{n}"
        assert created["enrichmentStatus"] == "pending" and created["tags"] == []
    assert await d1.sync() == 4
    assert await d2.sync() == 4
    assert live_state(d1) == live_state(d2)

    # Device 1 goes offline: its writes only queue up.
    d1.queue_put("b1", {"url": url(1), "title": "b1 edited offline on device 1"})
    d1.queue_delete("b2")
    d1.queue_put("b3", {"url": url(3), "notes": "notes from device 1"})
    d1.queue_put("b5", {"url": url(5), "title": "b5 created offline"})
    d1.queue_put("b6", {"url": url(6), "title": "created and deleted offline"})
    d1.queue_delete("b6")
    d1.queue_delete("b4")

    # Meanwhile device 2 edits the same bookmarks online.
    await d2.put("b1", {"url": url(1), "title": "b1 edited on device 2", "isFavorite": True})
    await d2.put("b2", {"url": url(2), "title": "b2 edited on device 2 before device 1 deleted it"})
    await d2.put("b3", {"url": url(3), "title": "b3 title from device 2"})
    await d2.put("b4", {"url": url(4), "notes": "b4 notes from device 2"})

    # Device 1 reconnects and replays its queue; then device 2 writes once more.
    await d1.replay()
    await d2.put("b3", {"url": url(3), "notes": "b3 notes from device 2, written last"})

    await d1.sync()
    await d2.sync()
    fresh = await d1.fresh_replica(limit=2)  # small pages: the walk crosses several cursors

    assert live_state(d1) == live_state(fresh), "device 1 differs from a fresh full sync"
    assert live_state(d2) == live_state(fresh), "device 2 differs from a fresh full sync"
    assert set(d1.deleted) == set(d2.deleted) == set(fresh.deleted) == {"b2", "b4", "b6"}
    assert set(fresh.records) == {"b1", "b3", "b5"}

    # The server's last-write-wins state, field by field (PUT is a merge: absent fields are kept).
    b1, b3, b5 = fresh.records["b1"], fresh.records["b3"], fresh.records["b5"]
    assert b1["title"] == "b1 edited offline on device 1"  # replayed after device 2's edit
    assert b1["isFavorite"] is True  # device 1 did not send it
    assert b3["title"] == "b3 title from device 2"
    assert b3["notes"] == "b3 notes from device 2, written last"
    assert b5["title"] == "b5 created offline" and b5["ownerUid"] == d1.user_id
    positions = sorted((r["updatedAt"], bid) for bid, r in fresh.records.items())
    assert positions[-1][1] == "b3", "the last write must hold the newest stream position"

    # Nothing else arrives on a further delta, and replaying the stored position is harmless.
    before = live_state(d2)
    await d2.sync()
    assert live_state(d2) == before
