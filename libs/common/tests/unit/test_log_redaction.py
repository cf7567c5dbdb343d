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


def _every_pattern(text: str) -> str:
    """What redact did before it had a shortcut: every pattern, always."""
    from common import logging as common_logging

    for pattern, replacement in (
        (common_logging._JWT, common_logging.REDACTED),
        (common_logging._BEARER, rf"\1{common_logging.REDACTED}"),
        (common_logging._QUERY_TOKEN, rf"\1{common_logging.REDACTED}"),
        (common_logging._CREDENTIAL_FIELD, rf"\1{common_logging.REDACTED}"),
    ):
        text = pattern.sub(replacement, text)
    return text


def test_the_shortcut_for_lines_without_credential_words_changes_nothing_the_patterns_would() -> None:
    from common.logging import redact

    samples = [
        '{"msg": "request", "path": "/v1/bookmarks/abc", "status": 200}',
        f'{{"detail": "got {JWT}"}}',
        "BEARER abc.def",
        "x ACCESS_TOKEN=abc&y=1",
        '{"Authorization": "Basic abc"}',
        '{"Set-Cookie": "s=1"}',
        '{"author\u0131zation": "abc"}',  # dotless i: the patterns fold it to i, str.lower() does not
        '{"coo\u212aie": "abc"}',  # KELVIN SIGN folds to k
        "x access_to\u212aen=abc",
    ]
    for text in samples:
        assert redact(text) == _every_pattern(text), text
    assert "abc" not in redact('{"author\u0131zation": "abc"}')


def test_timestamps_are_iso_utc_with_milliseconds() -> None:
    formatter = JsonFormatter("test")
    assert formatter.timestamp(1_700_000_000.0) == "2023-11-14T22:13:20.000+00:00"
    assert formatter.timestamp(1_700_000_000.9999) == "2023-11-14T22:13:20.999+00:00"
    assert formatter.timestamp(1_700_000_061.25) == "2023-11-14T22:14:21.250+00:00"
