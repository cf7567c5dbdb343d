"""Reading a JWT's lifetime to refresh ahead of time (no verification: the server does that)."""

from __future__ import annotations

import base64
import json

from bookmark_client.session import EXPIRY_SKEW_SECONDS, refresh_margin, token_expiry


def jwt(**claims: int) -> str:
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"h.{body}.s"


def test_token_expiry() -> None:
    assert token_expiry(jwt(iat=100, exp=1000)) == 1000.0
    assert token_expiry(jwt(iat=100)) is None
    assert token_expiry("not-a-jwt") is None
    assert token_expiry("a.!!!.c") is None


def test_refresh_margin_scales_with_token_lifetime() -> None:
    assert refresh_margin(jwt(iat=0, exp=900)) == EXPIRY_SKEW_SECONDS
    assert refresh_margin(jwt(iat=0, exp=20)) == 2.0  # short-lived tokens: a tenth of their life
    assert refresh_margin("opaque") == EXPIRY_SKEW_SECONDS
