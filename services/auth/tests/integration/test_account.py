"""Settings, plans (operator API), account deletion and the internal entitlements read."""

from __future__ import annotations

import uuid
from typing import Any


def _admin(token: str) -> dict[str, str]:
    return {"X-Admin-Token": token}


async def test_settings_default_to_no_ai_consent(api: Any) -> None:
    session = await api.anonymous()

    response = await api.client.get("/v1/me/settings", headers=api.bearer(session["accessToken"]))

    assert response.status_code == 200
    assert response.json() == {"useAi": False}


async def test_patch_settings_changes_consent_at_once_and_emits_user_updated(api: Any, consume: Any) -> None:
    session = await api.anonymous()
    user_id = session["user"]["id"]
    headers = api.bearer(session["accessToken"])

    response = await api.client.patch("/v1/me/settings", json={"useAi": True}, headers=headers)

    assert response.status_code == 200
    assert response.json() == {"useAi": True}
    assert (await api.client.get("/v1/me/settings", headers=headers)).json() == {"useAi": True}
    entitlements = await api.client.get(f"/internal/users/{user_id}/entitlements")
    assert entitlements.json() == {"exists": True, "useAi": True, "isPro": False}
    _, event = await consume("user.updated", lambda e: e.get("userId") == user_id and e.get("useAi") is True)
    assert event == {**event, "type": "user.updated", "isAnonymous": True, "isPro": False, "version": 1}

    back = await api.client.patch("/v1/me/settings", json={"useAi": False}, headers=headers)
    assert back.json() == {"useAi": False}


async def test_patch_settings_validates_the_body_and_changes_nothing(api: Any) -> None:
    session = await api.anonymous()
    headers = api.bearer(session["accessToken"])
    before = await api.table_counts()

    for body in ({}, {"useAi": "true"}, {"useAi": 1}, {"useAi": None}, ["useAi"]):
        response = await api.client.patch("/v1/me/settings", json=body, headers=headers)

        assert response.status_code == 400, body
        assert response.json()["code"] == "invalid-request"
        assert isinstance(response.json()["message"], str)
    malformed = await api.client.patch(
        "/v1/me/settings", content=b"{useAi: true}", headers={**headers, "content-type": "application/json"}
    )
    assert malformed.status_code == 400
    assert malformed.json() == {"code": "invalid-request", "message": "The request body is not valid JSON."}
    assert await api.table_counts() == before
    assert (await api.client.get("/v1/me/settings", headers=headers)).json() == {"useAi": False}


async def test_settings_need_a_token(api: Any) -> None:
    assert (await api.client.get("/v1/me/settings")).status_code == 401
    response = await api.client.patch("/v1/me/settings", json={"useAi": True})
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


async def test_admin_sets_pro_and_me_shows_it_at_once(api: Any, consume: Any, admin_token: str) -> None:
    session = await api.anonymous()
    user_id = session["user"]["id"]

    response = await api.client.put(
        f"/v1/admin/users/{user_id}/subscription", json={"isPro": True}, headers=_admin(admin_token)
    )

    assert response.status_code == 204
    assert response.content == b""
    assert (await api.me(session["accessToken"])).json()["isPro"] is True
    refreshed = (await api.refresh(session["refreshToken"])).json()
    assert refreshed["user"]["isPro"] is True
    assert (await api.client.get(f"/internal/users/{user_id}/entitlements")).json()["isPro"] is True
    await consume("user.updated", lambda e: e.get("userId") == user_id and e.get("isPro") is True)

    downgrade = await api.client.put(
        f"/v1/admin/users/{user_id}/subscription", json={"isPro": False}, headers=_admin(admin_token)
    )
    assert downgrade.status_code == 204
    assert (await api.me(refreshed["accessToken"])).json()["isPro"] is False


async def test_admin_with_a_wrong_or_missing_token_is_unauthorized(api: Any, admin_token: str) -> None:
    session = await api.anonymous()
    path = f"/v1/admin/users/{session['user']['id']}/subscription"
    before = await api.table_counts()

    for headers in ({}, _admin("wrong"), _admin(admin_token + "x"), _admin(admin_token[:-1]), _admin("")):
        response = await api.client.put(path, json={"isPro": True}, headers=headers)

        assert response.status_code == 401, headers
        assert response.json()["code"] == "unauthorized"
    # The token is checked before the body: without it, even a broken body says nothing more.
    broken = await api.client.put(path, content=b"{", headers={"content-type": "application/json"})
    assert broken.status_code == 401
    assert await api.table_counts() == before
    assert (await api.me(session["accessToken"])).json()["isPro"] is False


async def test_admin_validates_user_and_body(api: Any, admin_token: str) -> None:
    session = await api.anonymous()
    path = f"/v1/admin/users/{session['user']['id']}/subscription"

    unknown = await api.client.put(
        f"/v1/admin/users/{uuid.uuid4()}/subscription", json={"isPro": True}, headers=_admin(admin_token)
    )
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "not-found"
    not_a_uuid = await api.client.put(
        "/v1/admin/users/nope/subscription", json={"isPro": True}, headers=_admin(admin_token)
    )
    assert not_a_uuid.status_code == 400
    assert "userId" in not_a_uuid.json()["message"]
    for body in (b"{", b"{}", b'{"isPro": "yes"}', b"[]", b""):
        response = await api.client.put(
            path, content=body, headers={**_admin(admin_token), "content-type": "application/json"}
        )

        assert response.status_code == 400, body
        assert response.json()["code"] == "invalid-request"
    missing = await api.client.put(path, json={}, headers=_admin(admin_token))
    assert "isPro" in missing.json()["message"]


async def test_admin_api_does_not_exist_without_admin_token(make_settings: Any, run_app: Any, admin_token: str) -> None:
    async with run_app(make_settings(admin_token=None)) as client:
        session = (await client.post("/v1/auth/anonymous")).json()
        path = f"/v1/admin/users/{session['user']['id']}/subscription"
        responses = [
            await client.put(path, json={"isPro": True}, headers=_admin(admin_token)),
            await client.put(path, json={"isPro": True}),
            await client.get(path),
        ]
        me = (await client.get("/v1/me", headers={"Authorization": f"Bearer {session['accessToken']}"})).json()

    for response in responses:
        assert response.status_code == 404
        assert response.json()["code"] == "not-found"
    assert me["isPro"] is False


async def test_an_empty_admin_token_also_disables_the_admin_api(make_settings: Any, run_app: Any) -> None:
    async with run_app(make_settings(admin_token="")) as client:
        response = await client.put(
            f"/v1/admin/users/{uuid.uuid4()}/subscription", json={"isPro": True}, headers={"X-Admin-Token": ""}
        )

    assert response.status_code == 404


async def test_delete_account_removes_every_auth_row_and_kills_the_tokens(api: Any, consume: Any) -> None:
    session = (await api.sign_in_a(api.id_token_a(name="Leaving"))).json()
    user_id = session["user"]["id"]
    second_device = (await api.sign_in_a(api.id_token_a())).json()  # another user: must be untouched
    await api.client.patch("/v1/me/settings", json={"useAi": True}, headers=api.bearer(session["accessToken"]))
    await api.refresh(session["refreshToken"])
    pairing = await api.client.post("/v1/auth/pairing", headers=api.bearer(session["accessToken"]))
    assert pairing.status_code == 201
    assert all(count >= 1 for count in (await api.rows_of(user_id)).values())

    response = await api.client.delete("/v1/account", headers=api.bearer(session["accessToken"]))

    assert response.status_code == 204
    assert response.content == b""
    assert set((await api.rows_of(user_id)).values()) == {0}
    # The account's pairing codes died with it: none can bring a device into a deleted account.
    claim = await api.client.post("/v1/auth/pairing/claim", json={"code": pairing.json()["data"]["code"]})
    assert claim.status_code == 400
    assert claim.json()["code"] == "invalid-pairing-code"
    me = await api.me(session["accessToken"])
    assert me.status_code == 401
    assert me.json()["code"] == "unauthorized"
    assert me.headers["www-authenticate"] == "Bearer"
    for method, path in (("GET", "/v1/me/settings"), ("DELETE", "/v1/account")):
        gone = await api.client.request(method, path, headers=api.bearer(session["accessToken"]))
        assert gone.status_code == 401, path
        assert gone.json()["code"] == "unauthorized"
    patch = await api.client.patch("/v1/me/settings", json={"useAi": True}, headers=api.bearer(session["accessToken"]))
    assert patch.status_code == 401
    refresh = await api.refresh(session["refreshToken"])
    assert refresh.status_code == 401 and refresh.json()["code"] == "invalid-refresh-token"
    assert (await api.client.get(f"/internal/users/{user_id}/entitlements")).json() == {
        "exists": False,
        "useAi": False,
        "isPro": False,
    }
    assert (await api.me(second_device["accessToken"])).status_code == 200
    _, event = await consume("user.deleted", lambda e: e.get("userId") == user_id)
    assert event["type"] == "user.deleted"


async def test_the_identity_of_a_deleted_account_signs_up_afresh(api: Any) -> None:
    sub = f"a-{uuid.uuid4().hex}"
    first = (await api.sign_in_a(api.id_token_a(sub))).json()
    await api.client.delete("/v1/account", headers=api.bearer(first["accessToken"]))

    again = (await api.sign_in_a(api.id_token_a(sub))).json()

    assert again["user"]["id"] != first["user"]["id"]


async def test_admin_on_a_deleted_user_is_not_found(api: Any, admin_token: str) -> None:
    session = await api.anonymous()
    await api.client.delete("/v1/account", headers=api.bearer(session["accessToken"]))

    response = await api.client.put(
        f"/v1/admin/users/{session['user']['id']}/subscription", json={"isPro": True}, headers=_admin(admin_token)
    )

    assert response.status_code == 404


async def test_entitlements_of_an_unknown_user(api: Any) -> None:
    response = await api.client.get(f"/internal/users/{uuid.uuid4()}/entitlements")

    assert response.status_code == 200
    assert response.json() == {"exists": False, "useAi": False, "isPro": False}
    bad = await api.client.get("/internal/users/not-a-uuid/entitlements")
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid-request"
