"""No credential reaches a log line, whoever writes it (our code, uvicorn, a library's exception)."""

from __future__ import annotations

import json
import logging

from common.logging import JsonFormatter, register_secret

JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ1MSIsImV4cCI6MTcwMDAwMDAwMH0.c2lnbmF0dXJlLWJ5dGVz"
REFRESH = "q8T1m9t3vV0yLrS8b5sKxJk2hYc4PpFd"


def line(msg: str, *args: object, exc: BaseException | None = None, **extra: object) -> str:
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, msg, args, None)
    if exc is not None:
        record.exc_info = (type(exc), exc, None)
    record.__dict__.update(extra)
    text = JsonFormatter("test").format(record)
    json.loads(text)  # still one valid JSON object
    return text


def test_uvicorns_websocket_line_loses_the_access_token() -> None:
    text = line('%s - "WebSocket %s" [accepted]', "127.0.0.1:5000", f"/v1/events?access_token={JWT}&x=1")
    assert JWT not in text and "access_token=[redacted]" in text and "x=1" in text


def test_bearer_credentials_and_jwts_anywhere() -> None:
    text = line("upstream failed: Illegal header value b'Bearer %s '", "opaque-token-123")
    assert "opaque-token-123" not in text
    assert JWT not in line("token in an extra", detail=f"got {JWT}")
    assert JWT not in line("exception", exc=ValueError(f"bad token {JWT}"))


def test_credential_fields_in_structured_extras_and_quoted_json() -> None:
    text = line("body", body=json.dumps({"refreshToken": REFRESH, "deviceId": "d1"}), headers={"cookie": "s=abc1"})
    assert REFRESH not in text and "s=abc1" not in text and "d1" in text
    text = line("query", path=f"/v1/auth/refresh?refresh_token={REFRESH}")
    assert REFRESH not in text


def test_registered_secrets_are_redacted() -> None:
    register_secret("admin-secret-value")
    assert "admin-secret-value" not in line("X-Admin-Token was admin-secret-value ")
