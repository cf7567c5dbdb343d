"""One OpenAPI document for the public API, merged from the upstream services' own documents.

Each upstream serves FastAPI's ``/openapi.json``. The gateway keeps only the paths it really proxies to
that upstream (its route table decides: ``/internal/*`` and operational paths drop out), merges the
components of all upstreams (a name defined differently by two upstreams is renamed for the later one,
and its ``$ref``s with it), and states what the edge adds: the ``{code, message}`` error body for every
4xx/5xx, the Bearer (JWT) scheme on protected operations, the rate-limit and gateway errors, and the
``/v1/events`` WebSocket in the description (OpenAPI cannot describe WebSockets).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from typing import Any

import httpx

from common.retry import Backoff
from gateway.routing import UPSTREAMS, AuthMode, RouteSpec, route_for_path

log = logging.getLogger("gateway.openapi")

Json = dict[str, Any]

ERROR_SCHEMA: Json = {
    "title": "Error",
    "type": "object",
    "required": ["code", "message"],
    "properties": {
        "code": {"type": "string", "description": "Stable kebab-case error code.", "examples": ["not-found"]},
        "message": {"type": "string", "description": "Human-readable explanation."},
    },
}
BEARER, ADMIN = "bearerAuth", "adminToken"
SECURITY_SCHEMES: Json = {
    BEARER: {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "Access token from /v1/auth/anonymous, /v1/auth/oauth/* or /v1/auth/refresh.",
    },
    ADMIN: {"type": "apiKey", "in": "header", "name": "X-Admin-Token", "description": "Operator secret."},
}

DESCRIPTION = """\
Bookmark sync and enrichment API. Every path is relative to the gateway's base URL.

**Errors.** Every non-2xx response has the body `{"code": "...", "message": "..."}` (schema `Error`).
Every response carries `X-Request-Id` (echoed when the client sent one).

**Rate limits.** Per user for authenticated calls and per client IP for unauthenticated ones, enforced by
each gateway replica (token bucket). Responses carry `RateLimit-Limit`, `RateLimit-Remaining` and
`RateLimit-Reset`; a refused call is `429 rate-limited` with `Retry-After`.

**Real-time nudges: `GET /v1/events` (WebSocket).** Open a WebSocket to `/v1/events`, authenticated with
`Authorization: Bearer <accessToken>` or, where headers cannot be set (browsers), the `access_token`
query parameter. Whenever anything in the user's delta stream changes (own writes from any device,
deletes, collections, enrichment results, merges), every open socket of that user receives the text message
`{"type": "bookmarks_changed"}`; the client then runs a delta sync. Bursts may be coalesced into one
message but are never dropped. The server sends WebSocket pings every 30 s. Close codes:
`4401` missing, invalid, expired or revoked token (also when the token expires while connected:
reconnect with a fresh token); `4429` too many connections for this user; `1001` the gateway is
shutting down (reconnect).
"""

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_SECTIONS = (
    "schemas",
    "responses",
    "parameters",
    "examples",
    "requestBodies",
    "headers",
    "links",
    "callbacks",
    "pathItems",
)
_REF_PREFIX = "#/components/"

_RETRY_AFTER = {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}
_RATE_LIMIT_HEADERS = {
    "Retry-After": _RETRY_AFTER,
    "RateLimit-Limit": {"description": "Requests allowed per minute.", "schema": {"type": "integer"}},
    "RateLimit-Remaining": {"description": "Requests left right now.", "schema": {"type": "integer"}},
    "RateLimit-Reset": {"description": "Seconds until the allowance is full again.", "schema": {"type": "integer"}},
}


def _error_response(description: str, headers: Mapping[str, Any] | None = None) -> Json:
    response: Json = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if headers:
        response["headers"] = dict(headers)
    return response


def combine(documents: Mapping[str, Mapping[str, Any]], *, title: str, version: str) -> Json:
    """The public document from the upstream documents available (keyed by upstream name)."""
    components: dict[str, Json] = {"schemas": {"Error": copy.deepcopy(ERROR_SCHEMA)}}
    paths: Json = {}
    tags: dict[str, Json] = {}
    operation_ids: set[str] = set()
    for upstream in UPSTREAMS:
        document = documents.get(upstream)
        if document is None:
            continue
        own_paths = {path: item for path, item in document.get("paths", {}).items() if _served_by(path, upstream)}
        own_components = {
            section: entries
            for section, entries in document.get("components", {}).items()
            if section in _SECTIONS and isinstance(entries, dict)
        }
        renames = _renames(upstream, own_components, components)
        for section, entries in _rewrite_refs(own_components, renames).items():
            target = components.setdefault(section, {})
            for name, value in entries.items():
                target[renames.get((section, name), name)] = value
        for path, item in _rewrite_refs(own_paths, renames).items():
            spec = route_for_path(path)
            assert spec is not None  # _served_by checked it
            paths[path] = _edge_path_item(path, item, spec, upstream, operation_ids)
        for tag in document.get("tags", []):
            if isinstance(tag, dict) and "name" in tag:
                tags.setdefault(tag["name"], tag)
    components["securitySchemes"] = copy.deepcopy(SECURITY_SCHEMES)
    combined: Json = {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version, "description": DESCRIPTION},
        "paths": dict(sorted(paths.items())),
        "components": components,
    }
    if tags:
        combined["tags"] = list(tags.values())
    _prune_components(combined)
    return combined


def _served_by(path: str, upstream: str) -> bool:
    if not path.startswith("/v1/"):
        return False
    spec = route_for_path(path)
    return spec is not None and spec.upstream == upstream


def _renames(upstream: str, own: Mapping[str, Json], merged: Mapping[str, Json]) -> dict[tuple[str, str], str]:
    """New names for ``own`` components that clash with differently defined ``merged`` ones.

    Repeated to a fixed point: renaming one schema changes the ``$ref``s inside another, which may then
    differ from a same-named schema already merged.
    """
    renames: dict[tuple[str, str], str] = {}
    prefix = upstream.title().replace("-", "")
    while True:
        added = False
        for section, entries in _rewrite_refs(dict(own), renames).items():
            existing = merged.get(section, {})
            for name, value in entries.items():
                if (section, name) in renames or name not in existing or existing[name] == value:
                    continue
                taken = set(existing) | set(entries) | {new for (s, _), new in renames.items() if s == section}
                candidate, n = f"{prefix}{name}", 2
                while candidate in taken:
                    candidate, n = f"{prefix}{name}{n}", n + 1
                renames[(section, name)] = candidate
                added = True
        if not added:
            return renames


def _rewrite_refs(value: Any, renames: Mapping[tuple[str, str], str]) -> Any:
    """A deep copy of ``value`` with ``$ref``s to renamed components pointing at their new names."""
    if isinstance(value, dict):
        copied = {key: _rewrite_refs(item, renames) for key, item in value.items()}
        ref = copied.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            section, _, name = ref[len(_REF_PREFIX) :].partition("/")
            if (section, name) in renames:
                copied["$ref"] = f"{_REF_PREFIX}{section}/{renames[(section, name)]}"
        return copied
    if isinstance(value, list):
        return [_rewrite_refs(item, renames) for item in value]
    return value


def _edge_path_item(path: str, item: Json, spec: RouteSpec, upstream: str, operation_ids: set[str]) -> Json:
    for method in _METHODS:
        operation = item.get(method)
        if not isinstance(operation, dict):
            continue
        operation["security"] = _security(path, spec)
        _edge_responses(operation, spec, path)
        operation_id = operation.get("operationId")
        if isinstance(operation_id, str):
            if operation_id in operation_ids:
                operation_id = f"{upstream}_{operation_id}"
                operation["operationId"] = operation_id
            operation_ids.add(operation_id)
    return item


def _security(path: str, spec: RouteSpec) -> list[Json]:
    if spec.auth is AuthMode.REQUIRED:
        return [{BEARER: []}]
    if spec.auth is AuthMode.OPTIONAL:
        return [{}, {BEARER: []}]
    if path.startswith("/v1/admin/"):
        return [{ADMIN: []}]
    return []


def _edge_responses(operation: Json, spec: RouteSpec, path: str) -> None:
    responses: Json = operation.setdefault("responses", {})
    # FastAPI documents 422 for validation errors, but every service answers them 400 invalid-request.
    if "422" in responses:
        del responses["422"]
        responses.setdefault("400", {"description": "Invalid request (invalid-request)."})
    for code, response in list(responses.items()):
        if str(code)[:1] in ("4", "5"):
            description = response.get("description") if isinstance(response, dict) else None
            headers = response.get("headers") if isinstance(response, dict) else None
            responses[code] = _error_response(description or "Error.", headers)
    if spec.auth is not AuthMode.NONE or path.startswith("/v1/admin/"):
        _ensure(
            responses,
            "401",
            "Missing, invalid or expired credentials, or a deleted account (unauthorized).",
            {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
        )
    if "requestBody" in operation:
        _ensure(responses, "413", "Request body larger than MAX_BODY_BYTES, 1 MiB by default (payload-too-large).")
    _ensure(responses, "429", "Request rate limit exceeded (rate-limited).", _RATE_LIMIT_HEADERS)
    _ensure(responses, "503", "A service is unavailable (unavailable).", {"Retry-After": _RETRY_AFTER})
    _ensure(responses, "504", "A service did not answer in time (upstream-timeout).")
    _ensure(responses, "4XX", "Client error.")
    _ensure(responses, "5XX", "Server error.")


def _ensure(responses: Json, code: str, description: str, headers: Mapping[str, Any] | None = None) -> None:
    """Document an error the edge can answer; an upstream's own entry keeps its text and gains the headers."""
    existing = responses.get(code)
    if existing is None:
        responses[code] = _error_response(description, headers)
    elif headers:
        existing.setdefault("headers", {}).update({k: v for k, v in headers.items() if k not in existing["headers"]})


def _refs(value: Any, found: set[tuple[str, str]]) -> set[tuple[str, str]]:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            section, _, name = ref[len(_REF_PREFIX) :].partition("/")
            found.add((section, name))
        for item in value.values():
            _refs(item, found)
    elif isinstance(value, list):
        for item in value:
            _refs(item, found)
    return found


def _prune_components(document: Json) -> None:
    """Drop components nothing reaches any more (FastAPI's validation-error schemas, dropped paths')."""
    components: Json = document["components"]
    reachable = _refs({k: v for k, v in document.items() if k != "components"}, set())
    frontier = list(reachable)
    while frontier:
        section, name = frontier.pop()
        for ref in _refs(components.get(section, {}).get(name), set()) - reachable:
            reachable.add(ref)
            frontier.append(ref)
    reachable.add(("schemas", "Error"))
    for section in _SECTIONS:
        if section in components:
            kept = {n: v for n, v in components[section].items() if (section, n) in reachable}
            if kept:
                components[section] = kept
            else:
                del components[section]


class OpenApiCatalog:
    """Fetches the upstream documents in the background (until all are there, then now and then)."""

    def __init__(
        self,
        *,
        client: httpx.AsyncClient,
        upstreams: Mapping[str, str],
        refresh_seconds: float,
        title: str = "Bookmark Sync and Enrichment API",
        version: str = "1.0.0",
    ) -> None:
        self.client = client
        self.upstreams = dict(upstreams)
        self.refresh_seconds = refresh_seconds
        self.title = title
        self.version = version
        self._documents: dict[str, Json] = {}
        self._combined: Json | None = None
        self._reported: set[str] = set()

    @property
    def available(self) -> list[str]:
        return sorted(self._documents)

    def document(self) -> Json:
        if self._combined is None:
            self._combined = combine(self._documents, title=self.title, version=self.version)
        return self._combined

    async def run(self) -> None:
        backoff = Backoff(first=0.5, cap=10.0)
        while True:
            missing = await self.refresh()
            if missing:
                await backoff.wait()
            else:
                backoff.reset()
                await asyncio.sleep(self.refresh_seconds)

    async def refresh(self) -> list[str]:
        """Fetch every upstream document once; return the upstreams that could not be fetched."""
        missing = []
        for name, base in self.upstreams.items():
            try:
                response = await self.client.get(f"{base.rstrip('/')}/openapi.json", timeout=5.0)
                response.raise_for_status()
                document = response.json()
                if not isinstance(document, dict):
                    raise ValueError("not a JSON object")
            except (httpx.HTTPError, ValueError) as exc:
                if name not in self._documents and name not in self._reported:
                    self._reported.add(name)  # once: the upstream may take a while to come up
                    log.info("openapi of %s not available yet, retrying in the background: %s", name, exc)
                missing.append(name)
                continue
            if self._documents.get(name) != document:
                self._documents[name] = document
                self._combined = None
        return missing
