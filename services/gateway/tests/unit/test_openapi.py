"""The combined public OpenAPI document, from the services' real documents and from clashing ones."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from gateway.openapi import combine
from gateway.routing import route_for_path

ERROR_REF = {"$ref": "#/components/schemas/Error"}


def _service_documents() -> dict[str, dict[str, Any]]:
    documents = {}
    for name in ("auth", "bookmarks", "enrichment"):
        try:
            module = importlib.import_module(f"{name}.main")
        except ImportError:
            continue
        documents[name] = module.create_app().openapi()  # builds no engine or client: that is the lifespan's job
    return documents


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return own + [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in ("get", "put", "post", "delete", "patch")
    ]


@pytest.fixture(scope="module")
def combined() -> dict[str, Any]:
    documents = _service_documents()
    if not documents:
        pytest.skip("no service application is importable")
    return combine(documents, title="API", version="1.0.0")


def test_only_public_paths_are_documented(combined: dict[str, Any]) -> None:
    paths = set(combined["paths"])
    assert paths, "expected the services' public paths"
    assert all(p.startswith("/v1/") for p in paths)
    assert not any("/internal" in p for p in paths)


def test_every_public_path_of_a_service_is_routed_to_it() -> None:
    """The combined document drops what the gateway does not route: a new route of a service must be in
    the gateway's table (gateway.routing.ROUTES) to be reachable at all."""
    unrouted = [
        (upstream, path)
        for upstream, document in _service_documents().items()
        for path in document["paths"]
        if path.startswith("/v1/") and getattr(route_for_path(path), "upstream", None) != upstream
    ]
    assert unrouted == []


def test_every_error_response_is_the_error_body_and_refs_resolve(combined: dict[str, Any]) -> None:
    for path, method, op in _operations(combined):
        assert "422" not in op["responses"], (path, method)
        for code, response in op["responses"].items():
            if code[0] in "45":
                assert response["content"]["application/json"]["schema"] == ERROR_REF, (path, method, code)
        assert {"429", "503", "504", "4XX", "5XX"} <= set(op["responses"])
    for ref in _refs(combined):
        section, name = ref.removeprefix("#/components/").split("/")
        assert name in combined["components"][section], ref
    assert combined["components"]["schemas"]["Error"]["required"] == ["code", "message"]


def test_security_follows_the_edge(combined: dict[str, Any]) -> None:
    ops = {(path, method): op for path, method, op in _operations(combined)}
    expectations = {
        ("/v1/auth/anonymous", "post"): [],
        ("/v1/auth/refresh", "post"): [],
        ("/v1/auth/oauth/idp-a", "post"): [{}, {"bearerAuth": []}],
        ("/v1/me", "get"): [{"bearerAuth": []}],
        ("/v1/bookmarks/{clientBookmarkId}", "put"): [{"bearerAuth": []}],
        ("/v1/enrichment/enqueue", "post"): [{"bearerAuth": []}],
    }
    for key, security in expectations.items():
        if key in ops:
            assert ops[key]["security"] == security, key
    protected = [op for op in ops.values() if op["security"] == [{"bearerAuth": []}]]
    assert all("401" in op["responses"] for op in protected)
    scheme = combined["components"]["securitySchemes"]["bearerAuth"]
    assert scheme == {**scheme, "type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    assert "/v1/events" in combined["info"]["description"]


def test_the_document_loads_in_schemathesis(combined: dict[str, Any]) -> None:
    schemathesis = pytest.importorskip("schemathesis")
    schema = schemathesis.openapi.from_dict(combined)
    assert len(list(schema.get_all_operations())) == len(_operations(combined))


def _doc(paths: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    return {"openapi": "3.1.0", "paths": paths, "components": {"schemas": schemas}}


def _op(ref: str) -> dict[str, Any]:
    return {
        "responses": {
            "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": ref}}}},
            "422": {"description": "Validation Error"},
        }
    }


def test_clashing_component_names_are_renamed_with_their_refs() -> None:
    auth = _doc({"/v1/me": {"get": _op("#/components/schemas/Item")}}, {"Item": {"type": "string"}})
    bookmarks = _doc(
        {
            "/v1/bookmarks/delta": {"get": _op("#/components/schemas/Wrapper")},
            "/v1/me": {"get": _op("#/components/schemas/Item")},  # not bookmarks' path: dropped
            "/internal/x": {"get": _op("#/components/schemas/Secret")},
            "/healthz": {"get": {"responses": {"200": {"description": "ok"}}}},
        },
        {
            "Item": {"type": "integer"},
            "Wrapper": {"type": "object", "properties": {"item": {"$ref": "#/components/schemas/Item"}}},
            "Secret": {"type": "string"},
        },
    )
    enrichment = _doc(
        {"/v1/enrichment/status": {"get": _op("#/components/schemas/Item")}}, {"Item": {"type": "string"}}
    )
    combined = combine({"auth": auth, "bookmarks": bookmarks, "enrichment": enrichment}, title="t", version="1")

    assert set(combined["paths"]) == {"/v1/me", "/v1/bookmarks/delta", "/v1/enrichment/status"}
    schemas = combined["components"]["schemas"]
    assert schemas["Item"] == {"type": "string"}  # auth's, shared by enrichment's identical one
    assert schemas["BookmarksItem"] == {"type": "integer"}
    assert schemas["Wrapper"]["properties"]["item"] == {"$ref": "#/components/schemas/BookmarksItem"}
    assert "Secret" not in schemas  # only reachable from a dropped path
    status = combined["paths"]["/v1/enrichment/status"]["get"]["responses"]
    assert status["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Item"}
    assert status["400"]["content"]["application/json"]["schema"] == ERROR_REF  # was FastAPI's 422


def test_missing_upstreams_leave_a_valid_partial_document() -> None:
    combined = combine({}, title="t", version="1")
    assert combined["paths"] == {}
    assert "Error" in combined["components"]["schemas"]
