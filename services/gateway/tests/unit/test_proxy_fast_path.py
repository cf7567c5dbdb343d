"""The proxy fast path selects exactly the route FastAPI's own matching would.

FastAPI's router takes the first route, in order, whose ``matches`` is FULL; a PARTIAL (right path,
other method) becomes 405 only when no route matches fully. The fast path must pick the same proxy
route for every request it takes, and leave everything else to the routes behind it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from starlette.routing import Match

from common.app import flat_routes
from gateway.api.routes import ProxyFastPath
from gateway.main import create_app
from gateway.routing import ROUTES

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def _example(template: str) -> list[str]:
    one = re.sub(r"\{\w+:path\}", "a/b/c", re.sub(r"\{\w+\}", "x-1", template))
    return [one, one + "/", one.rstrip("/") + "/more"]


PATHS = sorted(
    {p for spec in ROUTES for p in _example(spec.template)}
    | {
        "/v1/events",
        "/v1/openapi.json",
        "/docs",
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/",
        "/v1",
        "/v1/",
        "/v1/unknown/x",
        "/v1/bookmarks",
        "/v1/bookmarks/",
        "/v1/bookmarks/search",
        "/v1/bookmarks/delta",
        "/v1/bookmarks/a b/collections",
        "/v1/bookmarks/../internal/x",
        "/internal/users",
        "/v2/bookmarks/x",
        "/v1/me",
        "/v1/me/",
        "/v1//bookmarks/x",
    }
)


@pytest.fixture(scope="module")
def routes() -> list[Any]:
    return list(create_app().router.routes)


def _scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": [], "query_string": b""}


def _fastapi_choice(routes: list[Any], scope: dict[str, Any]) -> Any:
    for route in flat_routes(routes):
        match, _ = route.matches(dict(scope))
        if match == Match.FULL:
            return route
    return None


def test_the_fast_path_is_first_and_knows_every_proxy_route(routes: list[Any]) -> None:
    fast = routes[0]
    assert isinstance(fast, ProxyFastPath)
    known = [spec.template for candidates in fast._by_section.values() for _, spec in candidates]
    assert sorted(known) == sorted(spec.template for spec in ROUTES)


@pytest.mark.parametrize("path", PATHS)
def test_it_selects_what_fastapi_would_or_steps_aside(routes: list[Any], path: str) -> None:
    fast, behind = routes[0], routes[1:]
    for method in METHODS:
        scope = _scope(method, path)
        expected = _fastapi_choice(behind, scope)
        match, child = fast.matches(dict(scope))
        if match == Match.FULL:
            assert child["route"] is expected, (method, path)
            assert child["gateway.route_spec"].template == expected.path
            expected_params = expected.matches(dict(scope))[1]["path_params"]
            assert child["path_params"] == expected_params
        else:
            is_proxy = expected is not None and getattr(expected.endpoint, "route_spec", None) is not None
            assert not is_proxy, f"{method} {path} left to FastAPI, which would proxy it"


def test_websockets_and_a_root_path_are_left_alone(routes: list[Any]) -> None:
    fast = routes[0]
    assert fast.matches({"type": "websocket", "path": "/v1/bookmarks/x"})[0] == Match.NONE
    assert fast.matches(_scope("GET", "/v1/bookmarks/x") | {"root_path": "/api"})[0] == Match.NONE
    assert fast.matches(_scope("GET", "/v1/bookmarks/x"))[0] == Match.FULL
