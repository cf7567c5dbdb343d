"""Device pairing: issue a code on one device, claim it on another (docs/pairing-and-capture.md)."""

from __future__ import annotations

import json
import logging
import re
import uuid
from typing import Any

import pytest
from sqlalchemy import text

from auth.domain.pairing import ALPHABET, hash_code
from common.logging import JsonFormatter

CODE_SHAPE = re.compile(f"^[{ALPHABET}]{{4}}-[{ALPHABET}]{{4}}$")


def _from(address: str) -> dict[str, str]:
    """The client address as the gateway passes it: each test guesses from its own address."""
    return {"X-Client-IP": address}


@pytest.fixture
def address() -> dict[str, str]:
    # A documentation-range IPv6 /64 of its own per test, so failed claims of one test never limit another.
    return _from(f"2001:db8:{uuid.uuid4().int % 0xFFFF:x}:{uuid.uuid4().int % 0xFFFF:x}::1")


async def _issue(api: Any, access: str) -> Any:
    return await api.client.post("/v1/auth/pairing", headers=api.bearer(access))


async def _claim(api: Any, code: Any, address: dict[str, str]) -> Any:
    return await api.client.post("/v1/auth/pairing/claim", json={"code": code}, headers=address)


async def test_a_claimed_code_signs_a_new_device_into_the_same_user(api: Any, address: dict[str, str]) -> None:
    first = await api.anonymous()

    issued = await _issue(api, first["accessToken"])

    assert issued.status_code == 201, issued.text
    assert issued.headers["cache-control"] == "no-store"
    data = issued.json()["data"]
    assert set(data) == {"code", "expiresAt"}
    assert CODE_SHAPE.match(data["code"]), data["code"]
    claimed = await _claim(api, data["code"], address)
    assert claimed.status_code == 200, claimed.text
    assert claimed.headers["cache-control"] == "no-store"
    second = claimed.json()
    assert set(second) == set(first) == {"accessToken", "refreshToken", "user"}
    assert second["user"] == first["user"]
    assert (await api.me(second["accessToken"])).json() == first["user"]
    # A new device: its own token family, and the first device keeps working.
    async with api.db.connect() as conn:
        families = await conn.execute(
            text("SELECT count(DISTINCT family_id) FROM refresh_tokens WHERE user_id = :u"),
            {"u": uuid.UUID(first["user"]["id"])},
        )
        assert families.scalar_one() == 2
    assert (await api.refresh(first["refreshToken"])).status_code == 200
    assert (await api.refresh(second["refreshToken"])).status_code == 200
    assert (await api.me(first["accessToken"])).status_code == 200


async def test_expires_at_is_five_minutes_ahead(api: Any) -> None:
    session = await api.anonymous()

    data = (await _issue(api, session["accessToken"])).json()["data"]

    async with api.db.connect() as conn:
        row = await conn.execute(
            text("SELECT expires_at - created_at AS ttl, expires_at FROM pairing_codes WHERE code_hash = :h"),
            {"h": hash_code(data["code"].replace("-", ""))},
        )
        ttl, expires_at = row.one()
    assert ttl.total_seconds() == 300
    assert data["expiresAt"].replace("Z", "+00:00") == expires_at.isoformat()


async def test_a_code_works_once(api: Any, address: dict[str, str]) -> None:
    session = await api.anonymous()
    code = (await _issue(api, session["accessToken"])).json()["data"]["code"]
    assert (await _claim(api, code, address)).status_code == 200

    again = await _claim(api, code, address)

    assert again.status_code == 400
    assert again.json() == {"code": "invalid-pairing-code", "message": again.json()["message"]}


async def test_an_expired_code_is_refused(api: Any, address: dict[str, str]) -> None:
    session = await api.anonymous()
    code = (await _issue(api, session["accessToken"])).json()["data"]["code"]
    async with api.db.begin() as conn:
        await conn.execute(
            text("UPDATE pairing_codes SET expires_at = now() - interval '1 second' WHERE code_hash = :h"),
            {"h": hash_code(code.replace("-", ""))},
        )

    response = await _claim(api, code, address)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid-pairing-code"


@pytest.mark.parametrize("variant", ["plain", "lower", "spaces", "no-dash", "mixed"])
async def test_dash_spaces_and_case_are_ignored(api: Any, address: dict[str, str], variant: str) -> None:
    session = await api.anonymous()
    code = (await _issue(api, session["accessToken"])).json()["data"]["code"]
    typed = {
        "plain": code,
        "lower": code.lower(),
        "spaces": f"  {code[:2]} {code[2:4]} - {code[5:]} ",
        "no-dash": code.replace("-", ""),
        "mixed": f"{code[:4].lower()}--{code[5:]}\t",
    }[variant]

    response = await _claim(api, typed, address)

    assert response.status_code == 200, (typed, response.text)
    assert response.json()["user"]["id"] == session["user"]["id"]


@pytest.mark.parametrize("code", ["AAAA-AAAA", "ABCD-EFG", "ABCD-EFGHJ", "0000-0000", "", "ÄBCD-EFGH", "-"])
async def test_a_wrong_code_is_refused(api: Any, address: dict[str, str], code: str) -> None:
    before = await api.table_counts()

    response = await _claim(api, code, address)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid-pairing-code"
    assert await api.table_counts() == before


async def test_a_new_code_keeps_older_ones_and_the_sixth_live_one_is_refused(api: Any, address: dict[str, str]) -> None:
    session = await api.anonymous()
    codes = []
    for _ in range(5):
        response = await _issue(api, session["accessToken"])
        assert response.status_code == 201
        codes.append(response.json()["data"]["code"])
    assert len(set(codes)) == 5

    sixth = await _issue(api, session["accessToken"])

    assert sixth.status_code == 429
    assert sixth.json()["code"] == "rate-limited"
    assert 1 <= int(sixth.headers["retry-after"]) <= 300
    # Every one of the five still works; a claimed or expired one frees a place.
    assert (await _claim(api, codes[0], address)).status_code == 200
    assert (await _issue(api, session["accessToken"])).status_code == 201
    async with api.db.begin() as conn:
        await conn.execute(
            text("UPDATE pairing_codes SET expires_at = now() - interval '1 second' WHERE code_hash = :h"),
            {"h": hash_code(codes[1].replace("-", ""))},
        )
    assert (await _issue(api, session["accessToken"])).status_code == 201
    for code in codes[2:]:
        assert (await _claim(api, code, address)).status_code == 200, code


async def test_issuing_needs_a_token(api: Any) -> None:
    response = await api.client.post("/v1/auth/pairing")

    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


async def test_the_eleventh_failed_claim_from_one_address_is_rate_limited(api: Any, address: dict[str, str]) -> None:
    session = await api.anonymous()
    good = (await _issue(api, session["accessToken"])).json()["data"]["code"]
    # Successes do not count: a device that pairs often is never limited by it.
    assert (await _claim(api, good, address)).status_code == 200
    for _ in range(10):
        assert (await _claim(api, "2222-2222", address)).status_code == 400

    limited = await _claim(api, "2222-2222", address)

    assert limited.status_code == 429
    assert limited.json()["code"] == "rate-limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    # Even a right code waits now: guessing gets no answer at all until the minute is over.
    good = (await _issue(api, session["accessToken"])).json()["data"]["code"]
    assert (await _claim(api, good, address)).status_code == 429
    # Another address is not affected, and the code is still live.
    other = _from("192.0.2.77")
    assert (await _claim(api, good, other)).status_code == 200


async def test_deleting_the_account_voids_its_codes(api: Any, address: dict[str, str]) -> None:
    session = await api.anonymous()
    code = (await _issue(api, session["accessToken"])).json()["data"]["code"]

    assert (await api.client.delete("/v1/account", headers=api.bearer(session["accessToken"]))).status_code == 204

    response = await _claim(api, code, address)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid-pairing-code"
    async with api.db.connect() as conn:
        left = await conn.execute(
            text("SELECT count(*) FROM pairing_codes WHERE user_id = :u"), {"u": uuid.UUID(session["user"]["id"])}
        )
        assert left.scalar_one() == 0


@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'"ABCD-EFGH"',
        b"{}",
        b'{"code": null}',
        b'{"code": 12345678}',
        b'{"code": ["ABCD-EFGH"]}',
        b'{"code": {"a": 1}}',
        b'{"code": "\\u0000BCD-EFGH"}',
        json.dumps({"code": "A" * 100_000}).encode(),
    ],
)
async def test_hostile_claim_bodies_are_invalid_requests(api: Any, address: dict[str, str], body: bytes) -> None:
    before = await api.table_counts()

    response = await api.client.post(
        "/v1/auth/pairing/claim", content=body, headers={**address, "content-type": "application/json"}
    )

    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    assert set(response.json()) == {"code", "message"}
    assert response.json()["code"] == "invalid-request"
    assert "A" * 65 not in response.text
    assert await api.table_counts() == before


async def test_no_code_appears_in_any_log_line(api: Any, address: dict[str, str], caplog: Any) -> None:
    session = await api.anonymous()
    formatter = JsonFormatter("auth")
    with caplog.at_level(logging.DEBUG):
        issued = (await _issue(api, session["accessToken"])).json()["data"]["code"]
        await _claim(api, issued.lower(), address)
        await _claim(api, issued, address)  # used: refused
        await _claim(api, "2345-6789", address)  # unknown
        await api.client.post(
            "/v1/auth/pairing/claim", content=b'{"code": "2345-6789', headers={"content-type": "application/json"}
        )

    lines = [formatter.format(record) for record in caplog.records]
    assert any("/v1/auth/pairing/claim" in line for line in lines), "the access log was not captured"
    raw = issued.replace("-", "")
    for secret in (issued, raw, issued.lower(), raw.lower(), "2345-6789", "23456789"):
        assert not any(secret in line for line in lines), secret
