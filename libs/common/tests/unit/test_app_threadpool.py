"""The app factory refuses endpoints and dependencies FastAPI would run in its threadpool."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastapi import APIRouter, Depends, Request

from common.app import threadpool_callables


def plain(request: Request) -> int:
    return 1


async def coroutine(request: Request) -> int:
    return 1


Plain = Annotated[int, Depends(plain)]
Coroutine = Annotated[int, Depends(coroutine)]


def build(dependency: object, *, sync_endpoint: bool = False) -> APIRouter:
    router = APIRouter()
    if sync_endpoint:

        @router.get("/x")
        def endpoint(value: Coroutine) -> int:
            return value
    elif dependency is plain:

        @router.get("/x")
        async def endpoint(value: Plain) -> int:  # type: ignore[misc]
            return value
    else:

        @router.get("/x")
        async def endpoint(value: Coroutine) -> int:  # type: ignore[misc]
            return value

    return router


def test_an_async_endpoint_with_async_dependencies_passes() -> None:
    assert threadpool_callables(build(coroutine).routes) == []


@pytest.mark.parametrize(
    ("dependency", "sync_endpoint", "expected"),
    [
        (plain, False, ["plain"]),
        (coroutine, True, ["build.<locals>.endpoint"]),
    ],
)
def test_plain_def_endpoints_and_dependencies_are_found(
    dependency: object, sync_endpoint: bool, expected: list[str]
) -> None:
    assert threadpool_callables(build(dependency, sync_endpoint=sync_endpoint).routes) == expected
