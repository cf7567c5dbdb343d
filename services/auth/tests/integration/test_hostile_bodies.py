"""Malformed, mistyped, oversized and wrongly labelled bodies: a 400/413 in the error model, nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

NOT_JSON = {"code": "invalid-request", "message": "The request body is not valid JSON."}


@pytest.fixture
async def routes(api: Any, admin_token: str) -> list[tuple[str, str, dict[str, str]]]:
    session = await api.anonymous()
    user = api.bearer(session["accessToken"])
    return [
        ("POST", "/v1/auth/oauth/idp-a", {}),
        ("POST", "/v1/auth/oauth/idp-b", {}),
        ("POST", "/v1/auth/refresh", {}),
        ("POST", "/v1/auth/logout", {}),
        ("PATCH", "/v1/me/settings", user),
        ("PUT", f"/v1/admin/users/{session['user']['id']}/subscription", {"X-Admin-Token": admin_token}),
    ]


@pytest.mark.parametrize("body", [b"{", b'{"a": }', b"\xff\xfe", b"{'single': 'quotes'}", b'{"x": 1} trailing'])
async def test_malformed_json_is_invalid_request_everywhere(api: Any, routes: Any, body: bytes) -> None:
    before = await api.table_counts()
    for method, path, headers in routes:
        response = await api.client.request(
            method, path, content=body, headers={**headers, "content-type": "application/json"}
        )

        assert response.status_code == 400, (path, body)
        assert response.json() == NOT_JSON, (path, body, response.json())
    assert await api.table_counts() == before


@pytest.mark.parametrize("body", [b"[]", b'"text"', b"42", b"null", b"true", b"NaN"])
async def test_json_that_is_not_an_object_is_invalid_request_everywhere(api: Any, routes: Any, body: bytes) -> None:
    before = await api.table_counts()
    for method, path, headers in routes:
        response = await api.client.request(
            method, path, content=body, headers={**headers, "content-type": "application/json"}
        )

        assert response.status_code == 400, (path, body)
        assert response.json()["code"] == "invalid-request"
        assert set(response.json()) == {"code", "message"}
    assert await api.table_counts() == before


async def test_a_missing_body_is_invalid_request_everywhere(api: Any, routes: Any) -> None:
    for method, path, headers in routes:
        response = await api.client.request(method, path, headers=headers)

        assert response.status_code == 400, path
        assert response.json()["code"] == "invalid-request"


async def test_a_body_over_one_mebibyte_is_payload_too_large(api: Any) -> None:
    before = await api.table_counts()
    huge = b'{"refreshToken": "' + b"a" * (1024 * 1024) + b'"}'

    response = await api.client.post("/v1/auth/refresh", content=huge, headers={"content-type": "application/json"})

    assert response.status_code == 413
    assert response.json()["code"] == "payload-too-large"
    assert await api.table_counts() == before


async def test_json_sent_with_another_content_type_is_not_a_server_error(api: Any) -> None:
    response = await api.client.post(
        "/v1/auth/refresh", content=b'{"refreshToken": "x"}', headers={"content-type": "text/plain"}
    )

    assert response.status_code in (400, 401)
    assert set(response.json()) == {"code", "message"}
