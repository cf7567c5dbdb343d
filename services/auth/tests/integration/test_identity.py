"""Sign-in with and linking of identity-provider identities, merges and conflicts (docs/api-guide.md, section 2)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from devstack.testing import LocalJwksServer


def _user_updated_for(user_id: str) -> Any:
    return lambda event: event.get("type") == "user.updated" and event.get("userId") == user_id


async def test_idp_a_sign_in_creates_a_user_from_the_token_profile(api: Any) -> None:
    sub = f"a-{uuid.uuid4().hex}"
    id_token = api.id_token_a(
        sub,
        email="ada@example.com",
        email_verified=True,
        name="Ada Lovelace",
        picture="https://idp-a.test/photo/ada.png",
    )

    response = await api.sign_in_a(id_token)

    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    session = response.json()
    assert set(session) == {"accessToken", "refreshToken", "user"}
    user = session["user"]
    assert user["isAnonymous"] is False
    assert user["displayName"] == "Ada Lovelace"
    assert user["email"] == "ada@example.com"
    assert user["photoUrl"] == "https://idp-a.test/photo/ada.png"
    assert user["isPro"] is False
    assert (await api.me(session["accessToken"])).json() == user


async def test_idp_a_sign_in_again_finds_the_same_user(api: Any) -> None:
    sub = f"a-{uuid.uuid4().hex}"
    first = (await api.sign_in_a(api.id_token_a(sub, name="First"))).json()

    second = await api.sign_in_a(api.id_token_a(sub, name="Renamed"))

    assert second.status_code == 200
    assert second.json()["user"] == first["user"]
    assert second.json()["refreshToken"] != first["refreshToken"]


async def test_idp_b_sign_in_with_a_relay_email_and_no_name(api: Any) -> None:
    id_token = api.id_token_b(email="x7k2qz9d4m@privaterelay.appleid.com", email_verified="true")

    response = await api.sign_in_b(id_token)

    assert response.status_code == 200, response.text
    user = response.json()["user"]
    assert user["isAnonymous"] is False
    assert user["email"] == "x7k2qz9d4m@privaterelay.appleid.com"
    assert user["displayName"] is None
    assert user["photoUrl"] is None


async def test_idp_b_accepts_an_es256_token_and_no_authorization_code(api: Any) -> None:
    id_token = api.idp_b.mint(sub=f"b-{uuid.uuid4().hex}", algorithm="ES256")

    response = await api.client.post("/v1/auth/oauth/idp-b", json={"identityToken": id_token})

    assert response.status_code == 200, response.text


async def test_the_same_subject_at_two_providers_is_two_users(api: Any) -> None:
    sub = f"shared-{uuid.uuid4().hex}"

    a = (await api.sign_in_a(api.id_token_a(sub))).json()["user"]
    b = (await api.sign_in_b(api.id_token_b(sub))).json()["user"]

    assert a["id"] != b["id"]


async def test_a_bearer_without_link_is_a_plain_sign_in(api: Any) -> None:
    anonymous = await api.anonymous()
    sub = f"a-{uuid.uuid4().hex}"

    for link in (None, False):
        response = await api.sign_in_a(api.id_token_a(sub), access=anonymous["accessToken"], link=link)

        assert response.status_code == 200
        assert response.json()["user"]["id"] != anonymous["user"]["id"]
    assert (await api.me(anonymous["accessToken"])).json()["isAnonymous"] is True


async def test_link_attaches_the_identity_to_the_anonymous_user(api: Any, consume: Any) -> None:
    anonymous = await api.anonymous()
    sub = f"a-{uuid.uuid4().hex}"
    id_token = api.id_token_a(sub, name="Grace", email="grace@example.com", picture="https://idp-a.test/g.png")

    response = await api.sign_in_a(id_token, access=anonymous["accessToken"], link=True)

    assert response.status_code == 200, response.text
    user = response.json()["user"]
    assert user["id"] == anonymous["user"]["id"]
    assert user["isAnonymous"] is False
    assert (user["displayName"], user["email"], user["photoUrl"]) == (
        "Grace",
        "grace@example.com",
        "https://idp-a.test/g.png",
    )
    assert (await api.me(anonymous["accessToken"])).json() == user
    # The identity now signs into this very user.
    again = await api.sign_in_a(api.id_token_a(sub))
    assert again.json()["user"]["id"] == user["id"]
    # The old session keeps working: linking does not log the device out.
    assert (await api.refresh(anonymous["refreshToken"])).status_code == 200
    _, event = await consume("user.updated", lambda e: _user_updated_for(user["id"])(e) and e["isAnonymous"] is False)
    assert event["isPro"] is False and event["useAi"] is False


async def test_link_fills_only_empty_profile_fields(api: Any) -> None:
    owner = (await api.sign_in_b(api.id_token_b(email="first@example.com"))).json()

    response = await api.sign_in_a(
        api.id_token_a(name="From A", email="second@example.com", picture="https://idp-a.test/p.png"),
        access=owner["accessToken"],
        link=True,
    )

    user = response.json()["user"]
    assert user["id"] == owner["user"]["id"]
    assert user["email"] == "first@example.com"
    assert user["displayName"] == "From A"
    assert user["photoUrl"] == "https://idp-a.test/p.png"


async def test_linking_an_identity_already_on_the_current_user_just_returns_a_session(api: Any) -> None:
    sub = f"a-{uuid.uuid4().hex}"
    owner = (await api.sign_in_a(api.id_token_a(sub))).json()
    before = await api.rows_of(owner["user"]["id"])

    response = await api.sign_in_a(api.id_token_a(sub), access=owner["accessToken"], link=True)

    assert response.status_code == 200
    assert response.json()["user"] == owner["user"]
    after = await api.rows_of(owner["user"]["id"])
    assert after["identities"] == before["identities"] == 1


async def test_link_conflict_from_an_anonymous_user_merges_into_the_owner(api: Any, consume: Any) -> None:
    sub = f"a-{uuid.uuid4().hex}"
    owner = (await api.sign_in_a(api.id_token_a(sub, name="Owner"))).json()
    anonymous = await api.anonymous()
    anonymous_id = anonymous["user"]["id"]

    response = await api.sign_in_a(api.id_token_a(sub), access=anonymous["accessToken"], link=True)

    assert response.status_code == 200, response.text
    session = response.json()
    assert session["user"] == owner["user"]
    assert (await api.me(session["accessToken"])).json() == owner["user"]
    # The anonymous user is gone with every auth row, and its tokens with it.
    assert set((await api.rows_of(anonymous_id)).values()) == {0}
    gone = await api.me(anonymous["accessToken"])
    assert gone.status_code == 401 and gone.json()["code"] == "unauthorized"
    assert (await api.refresh(anonymous["refreshToken"])).json()["code"] == "invalid-refresh-token"
    # The owner's own sessions are untouched.
    assert (await api.refresh(owner["refreshToken"])).status_code == 200
    # Other services learn of the merge from the real broker.
    record, event = await consume(
        "user.merged", lambda e: e.get("type") == "user.merged" and e.get("sourceUserId") == anonymous_id
    )
    assert event["userId"] == owner["user"]["id"]
    assert record.key == owner["user"]["id"].encode()
    uuid.UUID(event["eventId"])
    assert event["occurredAt"]


async def test_link_conflict_from_a_non_anonymous_user_is_409_and_changes_nothing(api: Any) -> None:
    sub = f"a-{uuid.uuid4().hex}"
    owner = (await api.sign_in_a(api.id_token_a(sub))).json()
    other = (await api.sign_in_b(api.id_token_b())).json()
    before = await api.table_counts()

    response = await api.sign_in_a(api.id_token_a(sub), access=other["accessToken"], link=True)

    assert response.status_code == 409
    assert response.json() == {
        "code": "identity-already-in-use",
        "message": "This identity already belongs to another account and cannot be merged.",
    }
    assert await api.table_counts() == before
    assert (await api.me(other["accessToken"])).status_code == 200
    assert (await api.me(owner["accessToken"])).status_code == 200


async def test_link_without_a_valid_bearer_is_unauthorized_and_changes_nothing(api: Any) -> None:
    before = await api.table_counts()
    for access in (None, "garbage", "a.b.c"):
        response = await api.sign_in_a(api.id_token_a(), access=access, link=True)

        assert response.status_code == 401, access
        assert response.json()["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"
    assert await api.table_counts() == before


async def test_link_with_the_token_of_a_deleted_user_is_unauthorized(api: Any) -> None:
    session = await api.anonymous()
    assert (await api.client.delete("/v1/account", headers=api.bearer(session["accessToken"]))).status_code == 204
    before = await api.table_counts()

    response = await api.sign_in_a(api.id_token_a(), access=session["accessToken"], link=True)

    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"
    assert await api.table_counts() == before


async def test_an_unconfigured_provider_is_unavailable(make_settings: Any, run_app: Any, idp_a: Any) -> None:
    settings = make_settings(idp_a_jwks_url=None, idp_a_issuer=None, idp_a_audience=None)
    async with run_app(settings) as client:
        response = await client.post("/v1/auth/oauth/idp-a", json={"idToken": idp_a.mint()})
        still_b = await client.post("/v1/auth/oauth/idp-b", json={"identityToken": "x"})

    assert response.status_code == 503
    assert response.json()["code"] == "unavailable"
    assert "Retry-After" in response.headers
    assert still_b.status_code == 401  # the other provider is configured and judges the token


async def test_an_unreachable_provider_is_unavailable_not_a_bad_token(make_settings: Any, run_app: Any) -> None:
    idp = LocalJwksServer(issuer="https://down.test", audience="down").start()
    id_token = idp.mint()
    jwks_url = idp.jwks_url
    idp.stop()
    settings = make_settings(idp_a_jwks_url=jwks_url, idp_a_issuer="https://down.test", idp_a_audience="down")
    async with run_app(settings) as client:
        response = await client.post("/v1/auth/oauth/idp-a", json={"idToken": id_token})

    assert response.status_code == 503
    assert response.json()["code"] == "unavailable"


async def test_hostile_identity_tokens_are_rejected_and_change_nothing(api: Any, idp_a: LocalJwksServer) -> None:
    now = int(time.time())
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    valid_header = {"kid": idp_a.rsa_kid}
    base = {"iss": idp_a.issuer, "aud": idp_a.audience, "sub": "victim", "iat": now, "exp": now + 600}
    unsigned = jwt.encode(base, key=None, algorithm="none", headers=valid_header)
    hostile = {
        "wrong audience": idp_a.mint(claims={"aud": "someone-else"}),
        "wrong issuer": idp_a.mint(claims={"iss": "https://evil.test"}),
        "expired beyond leeway": idp_a.mint(claims={"iat": now - 3600, "exp": now - 120}),
        "not yet valid": idp_a.mint(claims={"nbf": now + 3600}),
        "no subject": idp_a.mint(claims={"sub": ""}),
        "NUL in the subject": idp_a.mint(claims={"sub": "vic\u0000tim"}),
        "unpaired surrogate in the subject": idp_a.mint(claims={"sub": "vic\ud800tim"}),
        "alg none": unsigned,
        "signed by a stranger with the provider's kid": jwt.encode(base, stranger, "RS256", headers=valid_header),
        "unknown kid": jwt.encode(base, stranger, "RS256", headers={"kid": "nope"}),
        "no kid": jwt.encode(base, stranger, "RS256"),
        "garbage": "not-a-jwt",
        "empty": "",
        "another provider's token": api.idp_b.mint(),
    }
    before = await api.table_counts()
    for name, token in hostile.items():
        response = await api.sign_in_a(token)

        assert response.status_code == 401, name
        body = response.json()
        assert set(body) == {"code", "message"}, name
        assert body["code"] == "invalid-identity-token", name
        assert body["message"].startswith("The identity token"), name
    assert await api.table_counts() == before


async def test_an_identity_token_within_the_clock_leeway_is_accepted(api: Any, idp_a: LocalJwksServer) -> None:
    now = int(time.time())
    token = idp_a.mint(claims={"iat": now - 700, "exp": now - 30})

    response = await api.sign_in_a(token)

    assert response.status_code == 200, response.text


async def test_hostile_profile_claims_are_dropped(api: Any) -> None:
    token = api.id_token_a(name=["not", "a", "string"], email="not-an-email", picture="javascript:alert(1)")

    response = await api.sign_in_a(token)

    user = response.json()["user"]
    assert (user["displayName"], user["email"], user["photoUrl"]) == (None, None, None)


@pytest.mark.parametrize("bad", ["\u0000", "\ud800"])
async def test_profile_claims_with_nul_are_dropped(api: Any, bad: str) -> None:
    token = api.id_token_a(name=f"Ada{bad}", email=f"ada{bad}@example.com", picture=f"https://x.test/{bad}.png")

    response = await api.sign_in_a(token)

    assert response.status_code == 200, response.text
    user = response.json()["user"]
    assert (user["displayName"], user["email"], user["photoUrl"]) == (None, None, None)


async def test_oauth_bodies_are_validated(api: Any) -> None:
    cases = [
        ("/v1/auth/oauth/idp-a", {}, "idToken"),
        ("/v1/auth/oauth/idp-a", {"idToken": 42}, "idToken"),
        ("/v1/auth/oauth/idp-a", {"idToken": "x", "link": "yes"}, "link"),
        ("/v1/auth/oauth/idp-b", {"idToken": "x"}, "identityToken"),
        ("/v1/auth/oauth/idp-b", {"identityToken": "x", "authorizationCode": 7}, "authorizationCode"),
        ("/v1/auth/oauth/idp-a", {"idToken": "x\u0000"}, "idToken"),
        ("/v1/auth/oauth/idp-b", {"identityToken": "x\u0000"}, "identityToken"),
        ("/v1/auth/oauth/idp-b", {"identityToken": "x", "authorizationCode": "\u0000"}, "authorizationCode"),
        ("/v1/auth/refresh", {"refreshToken": "r\u0000"}, "refreshToken"),
        ("/v1/auth/logout", {"refreshToken": "r\u0000"}, "refreshToken"),
        ("/v1/auth/refresh", {"refreshToken": "r\ud800"}, "refreshToken"),
        ("/v1/auth/oauth/idp-a", {"idToken": "\udfff"}, "idToken"),
    ]
    before = await api.table_counts()
    for path, body, field in cases:
        # json.dumps escapes lone surrogates (httpx's json= would fail to encode them).
        response = await api.client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})

        assert response.status_code == 400, body
        assert response.json()["code"] == "invalid-request"
        assert field in response.json()["message"], (body, response.json())
    assert await api.table_counts() == before
