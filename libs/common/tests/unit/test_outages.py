"""A dependency outage answers 503 unavailable + Retry-After; a bug stays a 500."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import httpx
import pytest
from fastapi import APIRouter, FastAPI
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from common.app import create_service_app
from common.outages import is_outage
from common.settings import CommonSettings


def _wrapped(orig: BaseException, *, invalidated: bool = False) -> DBAPIError:
    """What SQLAlchemy raises for a driver error: the driver's exception is its cause."""
    try:
        raise orig
    except BaseException as exc:
        try:
            raise DBAPIError("SELECT 1", None, exc, connection_invalidated=invalidated) from exc
        except DBAPIError as wrapped:
            return wrapped


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)"),
        ConnectionResetError(104, "reset by peer"),
        OSError("Multiple exceptions: [Errno 111] Connect call failed"),
        OSError(113, "No route to host"),
        TimeoutError(),
        PoolTimeoutError("QueuePool limit of size 10 overflow 10 reached"),
        _wrapped(asyncpg.CannotConnectNowError("the database system is starting up")),
        _wrapped(asyncpg.TooManyConnectionsError("sorry, too many clients already")),
        _wrapped(asyncpg.AdminShutdownError("terminating connection due to administrator command")),
        _wrapped(asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")),
        _wrapped(RuntimeError("whatever the driver said"), invalidated=True),
        # Raised as they are on a raw asyncpg connection (one that LISTENs), not wrapped:
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.InterfaceError("connection is closed"),
        # A connection whose server sent FATAL and has not closed the socket yet (is_server_dropping):
        asyncpg.InternalClientError("cannot switch to state 15; another operation (2) is in progress"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_outages_are_recognised(exc: BaseException) -> None:
    assert is_outage(exc)


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("a bug"),
        ValueError("bad value"),
        FileNotFoundError(2, "No such file or directory"),
        PermissionError(13, "Permission denied"),
        IntegrityError("INSERT", None, Exception("duplicate key")),
        _wrapped(asyncpg.UniqueViolationError("duplicate key value")),
        _wrapped(asyncpg.UndefinedTableError('relation "nope" does not exist')),
        asyncpg.UniqueViolationError("duplicate key value"),
        asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
        asyncpg.InternalClientError("cannot switch to state 12; another operation (11) is in progress"),
        asyncpg.InternalClientError("unknown error in protocol implementation"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_bugs_are_not_outages(exc: BaseException) -> None:
    assert not is_outage(exc)


router = APIRouter()
RAISED: dict[str, BaseException] = {
    "refused": ConnectionRefusedError(111, "Connect call failed"),
    "starting": _wrapped(asyncpg.CannotConnectNowError("the database system is starting up")),
    "pool": PoolTimeoutError("QueuePool limit reached"),
    "dropping": asyncpg.InternalClientError("cannot switch to state 15; another operation (2) is in progress"),
    "bug": _wrapped(asyncpg.UndefinedTableError('relation "secret_table" does not exist')),
}


@router.get("/raise/{name}")
async def raise_it(name: str) -> None:
    raise RAISED[name]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = create_service_app(service="test", title="t", lifespan=lifespan, routers=[router], settings=CommonSettings())
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        yield c


@pytest.mark.parametrize("name", ["refused", "starting", "pool", "dropping"])
async def test_outage_answers_503_with_retry_after(client: httpx.AsyncClient, name: str) -> None:
    r = await client.get(f"/raise/{name}")
    assert r.status_code == 503
    assert r.json() == {"code": "unavailable", "message": "A dependency is unavailable; try again shortly."}
    assert int(r.headers["retry-after"]) >= 1


async def test_database_bug_stays_500_without_internals(client: httpx.AsyncClient) -> None:
    r = await client.get("/raise/bug", headers={"X-Request-Id": "req-9"})
    assert r.status_code == 500
    assert r.json() == {"code": "internal", "message": "Internal error; request id req-9."}
    assert "secret_table" not in r.text
