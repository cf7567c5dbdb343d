"""MAX_BODY_BYTES_BY_ROUTE: one exact route gets its own body limit; every other keeps MAX_BODY_BYTES."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Request

from common.app import create_service_app
from common.settings import CommonSettings

router = APIRouter()


@router.post("/v1/imports")
async def big(request: Request) -> dict[str, int]:
    return {"size": len(await request.body())}


@router.post("/v1/other")
async def small(request: Request) -> dict[str, int]:
    return {"size": len(await request.body())}


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    settings = CommonSettings(MAX_BODY_BYTES=1000, MAX_BODY_BYTES_BY_ROUTE={"POST /v1/imports": 5000})
    app = create_service_app(service="test", title="t", lifespan=lifespan, routers=[router], settings=settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


async def chunks(total: int) -> AsyncIterator[bytes]:
    for _ in range(total // 100):
        yield b"x" * 100


async def test_the_overridden_route_takes_bodies_up_to_its_own_limit(client: httpx.AsyncClient) -> None:
    assert (await client.post("/v1/imports", content=b"x" * 5000)).json() == {"size": 5000}
    assert (await client.post("/v1/imports", content=chunks(5000))).json() == {"size": 5000}
    for body in (b"x" * 5001, chunks(5100)):
        r = await client.post("/v1/imports", content=body)
        assert r.status_code == 413
        assert r.json()["message"] == "The request body is larger than the limit of 5000 bytes."


async def test_every_other_route_keeps_the_global_limit(client: httpx.AsyncClient) -> None:
    for body in (b"x" * 1001, chunks(1100)):
        r = await client.post("/v1/other", content=body)
        assert r.status_code == 413 and "1000 bytes" in r.json()["message"]
    r = await client.put("/v1/imports", content=b"x" * 1001)  # another method of the same path
    assert r.status_code == 413


def test_the_default_gives_imports_fifty_mib_and_captures_sixteen(monkeypatch: pytest.MonkeyPatch) -> None:
    assert CommonSettings().max_body_bytes_by_route == {
        "POST /v1/imports": 50 * 1024 * 1024,
        "POST /v1/enrichment/capture": 16 * 1024 * 1024,
    }
    monkeypatch.setenv("MAX_BODY_BYTES_BY_ROUTE", '{"POST /v1/imports": 1048576}')
    assert CommonSettings().max_body_bytes_by_route == {"POST /v1/imports": 1024 * 1024}
