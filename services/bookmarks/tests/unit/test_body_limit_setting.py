"""MAX_BODY_BYTES is the body limit of this service too, and the 413 names it (issue 11 item 12)."""

from __future__ import annotations

import httpx

from bookmarks.main import create_app
from bookmarks.settings import Settings


async def test_max_body_bytes_is_applied_and_named() -> None:
    app = create_app(Settings(MAX_BODY_BYTES=1000))  # the lifespan is not run: nothing is connected
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        response = await client.post("/v1/anything", content=b"x" * 1001, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json() == {
        "code": "payload-too-large",
        "message": "The request body is larger than the limit of 1000 bytes.",
    }
