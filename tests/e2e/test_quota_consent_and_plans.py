"""Scenarios (e) and (f): the free-tier quota, the operator's Pro upgrade, and the useAi consent.

The URLs queued for the quota are distinct pages of the local site that answer 404, so their jobs end
at once (``upstream-4xx`` is not retried) and cost the shared machine next to nothing.
"""

from __future__ import annotations

import uuid

import httpx
from e2e_support import LocalSite, anonymous, assert_error, expect

ADMIN_TOKEN = "test-admin-token"  # FULL_STACK_TEST_ENV of devstack.pytest_plugin


async def test_sixth_enqueue_in_a_minute_is_refused_until_the_user_becomes_pro(
    http: httpx.AsyncClient, site: LocalSite
) -> None:
    user = await anonymous(http)
    await user.enable_ai()
    assert (await user.me())["isPro"] is False

    def missing_page() -> str:
        return str(site.url(f"/gone/{uuid.uuid4().hex}"))

    for n in range(5):
        accepted = expect(await user.enqueue(f"q{n}", missing_page()), 202)
        assert accepted.json() == {"accepted": True, "status": "pending"}
    refused = await user.enqueue("q5", missing_page())
    assert_error(refused, 429, "quota-exceeded")
    retry_after = refused.headers.get("retry-after")
    assert retry_after is not None and retry_after.isdigit() and int(retry_after) >= 1, retry_after

    # The operator API needs its token; with it the user becomes Pro at once.
    path = f"/v1/admin/users/{user.user_id}/subscription"
    assert_error(await http.put(path, json={"isPro": True}), 401, "unauthorized")
    assert_error(await http.put(path, json={"isPro": True}, headers={"X-Admin-Token": "wrong"}), 401, "unauthorized")
    expect(await http.put(path, json={"isPro": True}, headers={"X-Admin-Token": ADMIN_TOKEN}), 204)
    assert (await user.me())["isPro"] is True

    # Pro has no quota: the very next enqueue is accepted, and more after it.
    for n in range(5, 8):
        assert expect(await user.enqueue(f"q{n}", missing_page()), 202).json()["accepted"] is True


async def test_enqueue_needs_consent(http: httpx.AsyncClient, site: LocalSite) -> None:
    user = await anonymous(http)
    assert expect(await user.request("GET", "/v1/me/settings"), 200).json() == {"useAi": False}
    url = site.url(f"/gone/{uuid.uuid4().hex}")
    await user.put("no-consent", {"url": url})

    assert_error(await user.enqueue("no-consent", url), 403, "consent-required")
    assert_error(await user.enqueue("no-consent", "ftp://example.com/file"), 403, "consent-required")  # consent first

    # Effective for the very next request (docs/api-guide.md, section 9).
    await user.enable_ai()
    assert expect(await user.enqueue("no-consent", url), 202).json() == {"accepted": True, "status": "pending"}
