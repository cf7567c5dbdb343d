"""Link health (docs/api-guide.md, section 15): link.checked applied, streamed through delta and searched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from common.events import LinkChecked
from devstack.testing import eventually

CHECKED = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


def checked(user: Any, bookmark: str, url: str, status: str, at: datetime, moved_to: str | None = None) -> LinkChecked:
    return LinkChecked(
        userId=user.id, clientBookmarkId=bookmark, normalizedUrl=url, linkStatus=status, checkedAt=at, movedTo=moved_to
    )


async def test_link_status_reaches_devices_through_delta_in_check_order(
    http: httpx.AsyncClient, user: Any, publish: Any, sync: Any
) -> None:
    url = "https://lh.example/old"
    saved = (await http.put("/v1/bookmarks/lh1", json={"url": url, "title": "Mine"}, headers=user.headers)).json()
    assert saved["data"]["linkStatus"] is None and saved["data"]["linkCheckedAt"] is None
    assert saved["data"]["linkMovedTo"] is None
    _, _, cursor = await sync(user)
    await publish(checked(user, "lh1", url, "moved", CHECKED, "https://lh.example/new"))

    async def moved() -> Any:
        live, _, _ = await sync(user, cursor)
        record = live.get("lh1")
        return record if record and record["linkStatus"] == "moved" else None

    record = await eventually(moved)
    assert record["linkCheckedAt"] == "2026-11-02T08:00:00.000000Z"
    assert record["linkMovedTo"] == "https://lh.example/new" and record["title"] == "Mine"

    # An older report arriving late changes nothing; a newer one replaces it (and clears linkMovedTo).
    await publish(checked(user, "lh1", url, "gone", CHECKED - timedelta(days=1)))
    await publish(checked(user, "lh1", url, "ok", CHECKED + timedelta(days=30), "https://ignored.example/"))

    async def ok() -> Any:
        live, _, _ = await sync(user)
        record = live["lh1"]
        return record if record["linkStatus"] == "ok" else None

    record = await eventually(ok)
    assert record["linkMovedTo"] is None and record["linkCheckedAt"] == "2026-12-02T08:00:00.000000Z"


async def test_a_report_about_another_url_is_ignored_and_a_new_url_clears_the_status(
    http: httpx.AsyncClient, user: Any, publish: Any, sync: Any
) -> None:
    await http.put("/v1/bookmarks/lh2", json={"url": "https://lh2.example/a"}, headers=user.headers)
    await publish(checked(user, "lh2", "https://lh2.example/a", "gone", CHECKED))

    async def gone() -> Any:
        live, _, _ = await sync(user)
        return live["lh2"]["linkStatus"] == "gone" or None

    await eventually(gone)
    changed = await http.put("/v1/bookmarks/lh2", json={"url": "https://lh2.example/b"}, headers=user.headers)
    data = changed.json()["data"]
    assert data["linkStatus"] is None and data["linkCheckedAt"] is None
    # A late report about the old address does not describe the new one.
    await publish(checked(user, "lh2", "https://lh2.example/a", "gone", CHECKED + timedelta(hours=1)))
    await publish(checked(user, "lh2", "https://lh2.example/b", "blocked", CHECKED + timedelta(hours=2)))

    async def blocked() -> Any:
        live, _, _ = await sync(user)
        return live["lh2"]["linkStatus"] == "blocked" or None

    await eventually(blocked)


async def test_search_finds_broken_links_and_each_status(
    http: httpx.AsyncClient, user: Any, publish: Any, sync: Any
) -> None:
    statuses = {"s-ok": "ok", "s-moved": "moved", "s-gone": "gone", "s-blocked": "blocked", "s-unr": "unreachable"}
    for bookmark in [*statuses, "s-never"]:
        await http.put(f"/v1/bookmarks/{bookmark}", json={"url": f"https://{bookmark}.example/"}, headers=user.headers)
    for bookmark, status in statuses.items():
        await publish(checked(user, bookmark, f"https://{bookmark}.example/", status, CHECKED))

    async def all_applied() -> bool:
        live, _, _ = await sync(user)
        return all(live[b]["linkStatus"] == s for b, s in statuses.items())

    await eventually(all_applied)

    async def found(q: str) -> set[str]:
        response = await http.get("/v1/bookmarks/search", params={"q": q, "limit": 100}, headers=user.headers)
        assert response.status_code == 200, response.text
        return {r["bookmark"]["clientBookmarkId"] for r in response.json()["data"]["results"]} & {*statuses, "s-never"}

    assert await found("is:broken") == {"s-gone", "s-unr"}
    assert await found("-is:broken") == {"s-ok", "s-moved", "s-blocked", "s-never"}
    for bookmark, status in statuses.items():
        assert await found(f"link:{status}") == {bookmark}
    assert await found("-link:ok") == {"s-moved", "s-gone", "s-blocked", "s-unr", "s-never"}
    refused = await http.get("/v1/bookmarks/search", params={"q": "link:dead"}, headers=user.headers)
    assert refused.status_code == 400 and refused.json()["code"] == "invalid-request"
    assert "link:dead" in refused.json()["message"]
