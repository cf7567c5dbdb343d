"""Scenario (b): an anonymous device links an idp-a identity that another account already owns.

docs/api-guide.md, section 2: the caller is signed into the owner, the anonymous user's bookmarks are merged into
the owner (per clientBookmarkId the later ``updatedAt`` wins) with fresh positions so the owner's other
devices receive them through delta (and a nudge), the anonymous account is deleted and its tokens are
refused from the moment the link answered.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from e2e_support import Device, anonymous, assert_error, expect, identity_token, nudge_socket, sign_in, sync_on_nudges

from devstack.testing import LocalJwksServer


async def test_linking_an_owned_identity_merges_the_anonymous_account_into_the_owner(
    http: httpx.AsyncClient, idp_a: LocalJwksServer, stack: Any
) -> None:
    sub = f"owner-{uuid.uuid4().hex}"
    owner = await sign_in(http, idp_a, sub, name="Olivia Owner")  # the owner's other device

    # Interleaved writes on both accounts decide which side wins each shared id.
    await owner.put("shared-anon-wins", {"url": "https://example.com/one", "title": "owner's older copy"})
    await owner.put("owner-only", {"url": "https://example.com/owner", "title": "only the owner had it"})
    anon = await anonymous(http)
    await anon.put("shared-owner-wins", {"url": "https://example.com/two", "title": "anonymous older copy"})
    await anon.put(
        "shared-anon-wins", {"url": "https://example.com/one", "title": "anonymous newer copy", "notes": "n"}
    )
    await anon.put("anon-only", {"url": "https://example.com/anon", "title": "only the anonymous device had it"})
    await anon.delete("anon-deleted")
    await owner.put("shared-owner-wins", {"url": "https://example.com/two", "title": "owner's newer copy"})

    await owner.sync()
    assert set(owner.records) == {"shared-anon-wins", "owner-only", "shared-owner-wins"}

    async with nudge_socket(stack.gateway_url, owner.token) as socket:
        response = await anon.request(
            "POST", "/v1/auth/oauth/idp-a", json={"idToken": identity_token(idp_a, sub), "link": True}
        )
        session = expect(response, 200).json()
        assert session["user"]["id"] == owner.user_id, "the link must sign into the identity's owner"
        assert session["user"]["isAnonymous"] is False
        assert session["accessToken"] and session["refreshToken"]

        # The anonymous account is gone: its token is refused at once, its refresh token too.
        for path in ("/v1/me", "/v1/bookmarks/delta"):
            refused = await anon.request("GET", path)
            assert_error(refused, 401, "unauthorized")
            assert refused.headers.get("www-authenticate", "").lower().startswith("bearer")
        assert_error(
            await http.post("/v1/auth/refresh", json={"refreshToken": anon.session["refreshToken"]}),
            401,
            "invalid-refresh-token",
        )

        # The owner's other device syncs only when nudged, as a client does: the merge must reach it.
        async def merged() -> bool:
            return "anon-only" in owner.records and owner.records["shared-anon-wins"]["title"] == "anonymous newer copy"

        await sync_on_nudges(owner, socket, until=merged)

    records = owner.records
    assert set(records) >= {"shared-anon-wins", "owner-only", "shared-owner-wins", "anon-only"}
    assert records["shared-anon-wins"]["notes"] == "n"
    assert records["shared-owner-wins"]["title"] == "owner's newer copy"
    assert records["owner-only"]["title"] == "only the owner had it"
    assert records["anon-only"]["title"] == "only the anonymous device had it"
    assert all(r["ownerUid"] == owner.user_id for r in records.values())

    # The merged session works and sees the same state as the owner's device.
    merged_device = Device(http, session)
    assert (await merged_device.me())["id"] == owner.user_id
    fresh = await merged_device.fresh_replica(limit=3)
    await owner.sync()
    assert fresh.records == owner.records
