"""Every failure of a service app answers {code, message} (docs/api-guide.md, section 1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from prometheus_client import generate_latest
from pydantic import BaseModel, Field

from common.app import create_service_app
from common.errors import QuotaExceeded, Unauthorized
from common.settings import CommonSettings


class Body(BaseModel):
    name: str = Field(max_length=5)
    count: int


router = APIRouter()


@router.post("/things/{thing_id}")
async def create_thing(thing_id: int, body: Body) -> dict[str, str]:
    return {"ok": body.name}


@router.get("/boom")
async def boom() -> None:
    raise RuntimeError("secret internals")


@router.get("/quota")
async def quota() -> None:
    raise QuotaExceeded("Monthly enrichment limit reached.", retry_after_seconds=30)


@router.get("/auth")
async def auth() -> None:
    raise Unauthorized()


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    settings = CommonSettings(MAX_BODY_BYTES=1000)
    app = create_service_app(service="test", title="t", lifespan=lifespan, routers=[router], settings=settings)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        yield c


async def test_validation_error_names_the_field(client: httpx.AsyncClient) -> None:
    r = await client.post("/things/1", json={"name": "toolongname", "count": 1})
    assert r.status_code == 400
    assert r.json()["code"] == "invalid-request" and "name" in r.json()["message"]
    r = await client.post("/things/1", json={"name": "ok"})
    assert r.json() == {"code": "invalid-request", "message": "Field 'count' is required."}
    r = await client.post("/things/abc", json={"name": "ok", "count": 1})
    assert r.status_code == 400 and "thing_id" in r.json()["message"]


async def test_malformed_json(client: httpx.AsyncClient) -> None:
    r = await client.post("/things/1", content=b"{", headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json() == {"code": "invalid-request", "message": "The request body is not valid JSON."}


async def test_unknown_route_and_wrong_method(client: httpx.AsyncClient) -> None:
    r = await client.get("/nope")
    assert r.status_code == 404 and r.json() == {"code": "not-found", "message": "Not found."}
    r = await client.delete("/things/1")
    assert r.status_code == 405 and r.json()["code"] == "method-not-allowed"


async def test_unexpected_exception_is_500_with_request_id_only(client: httpx.AsyncClient) -> None:
    r = await client.get("/boom", headers={"X-Request-Id": "req-123"})
    assert r.status_code == 500
    assert r.json() == {"code": "internal", "message": "Internal error; request id req-123."}
    assert "secret" not in r.text and "Traceback" not in r.text
    assert r.headers["x-request-id"] == "req-123"


async def test_request_id_is_generated_and_echoed(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz")
    assert len(r.headers["x-request-id"]) == 32
    r = await client.get("/healthz", headers={"X-Request-Id": "abc-1"})
    assert r.headers["x-request-id"] == "abc-1"
    r = await client.get("/healthz", headers={"X-Request-Id": "bad id with spaces"})
    assert r.headers["x-request-id"] != "bad id with spaces"


async def test_error_headers(client: httpx.AsyncClient) -> None:
    r = await client.get("/quota")
    assert r.status_code == 429 and r.headers["retry-after"] == "30" and r.json()["code"] == "quota-exceeded"
    r = await client.get("/auth")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


TOO_LARGE = {"code": "payload-too-large", "message": "The request body is larger than the limit of 1000 bytes."}


async def test_body_limit(client: httpx.AsyncClient) -> None:
    r = await client.post("/things/1", content=b"x" * 1001, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json() == TOO_LARGE

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b"x" * 100

    r = await client.post("/things/1", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json() == TOO_LARGE


async def test_metrics_use_route_templates(client: httpx.AsyncClient) -> None:
    await client.post("/things/99", json={"name": "a", "count": 1})
    text = generate_latest().decode()
    assert 'route="/things/{thing_id}"' in text and 'route="/things/99"' not in text


async def test_metrics_are_not_served_on_the_client_port(client: httpx.AsyncClient) -> None:
    r = await client.get("/metrics")
    assert r.status_code == 404 and r.json() == {"code": "not-found", "message": "Not found."}


async def test_no_trailing_slash_redirect(client: httpx.AsyncClient) -> None:
    r = await client.post("/things/1/", json={"name": "a", "count": 1})
    assert r.status_code == 404 and "location" not in r.headers
    assert r.json() == {"code": "not-found", "message": "Not found."}


def test_the_body_limit_is_read_from_max_body_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAX_BODY_BYTES", "2097152")
    assert CommonSettings().max_body_bytes == 2 * 1024 * 1024
