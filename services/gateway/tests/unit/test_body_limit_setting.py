"""MAX_BODY_BYTES is the body limit of this service too, and the 413 names it."""

from __future__ import annotations

from devstack.testing import assert_body_limit_is_applied_and_named
from gateway.main import create_app
from gateway.settings import Settings


async def test_max_body_bytes_is_applied_and_named() -> None:
    await assert_body_limit_is_applied_and_named(create_app(Settings(MAX_BODY_BYTES=1000)), 1000)
