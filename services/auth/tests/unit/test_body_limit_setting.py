"""MAX_BODY_BYTES is the body limit of this service too, and the 413 names it."""

from __future__ import annotations

from auth.main import create_app
from auth.settings import Settings
from devstack.testing import assert_body_limit_is_applied_and_named


async def test_max_body_bytes_is_applied_and_named() -> None:
    await assert_body_limit_is_applied_and_named(create_app(Settings(MAX_BODY_BYTES=1000)), 1000)
