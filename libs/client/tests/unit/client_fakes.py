"""An in-memory stand-in for the service, served to the client through ``httpx.MockTransport``.

It implements just what the client relies on (service-spec + decisions.md): sessions with rotating,
reuse-detecting refresh tokens; bookmark PUT/DELETE/collections with server-side positions; cursor
delta pages; enrichment and settings stubs. ``script()`` injects failures for matching requests.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx


def fake_jwt(sub: str, *, lifetime: float = 3600) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = time.time()
    claims = {"sub": sub, "iat": int(now), "exp": int(now + lifetime), "jti": uuid.uuid4().hex}
    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


def error(status: int, code: str, message: str = "", headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "message": message or code}, headers=headers)


@dataclass
class Refresh:
    user_id: str
    family: str
    used: bool = False


@dataclass
class FakeServer:
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    access: dict[str, str] = field(default_factory=dict)  # token -> user id
    refresh_tokens: dict[str, Refresh] = field(default_factory=dict)
    revoked_families: set[str] = field(default_factory=set)
    bookmarks: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # user -> id -> record
    positions: dict[tuple[str, str], int] = field(default_factory=dict)
    settings: dict[str, bool] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    urls: list[httpx.URL] = field(default_factory=list)
    refresh_calls: int = 0
    unauthorized_answers: int = 0
    token_lifetime: float = 3600
    reuse_detected: int = 0
    # (method, path prefix) -> queue of failures: an exception class/instance, or an httpx.Response.
    scripted: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    # When set, 401s are held back until this many have been produced (to force concurrent refreshes).
    hold_unauthorized: int = 0
    _held: list[asyncio.Event] = field(default_factory=list)
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # -- setup helpers ---------------------------------------------------------------------------

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def script(self, method: str, path_prefix: str, *failures: Any) -> None:
        self.scripted.setdefault((method, path_prefix), []).extend(failures)

    def expire_all_access_tokens(self) -> None:
        self.access.clear()

    def server_write(self, user_id: str, bookmark_id: str, **fields: Any) -> dict[str, Any]:
        """A write by "another device": straight into the server state."""
        return self._upsert(user_id, bookmark_id, fields)

    def server_delete(self, user_id: str, bookmark_id: str) -> None:
        self._delete(user_id, bookmark_id)

    def server_enrich(self, user_id: str, bookmark_id: str, **fields: Any) -> None:
        record = self.bookmarks[user_id][bookmark_id]
        record.update(fields)
        self._touch(user_id, record)

    # -- dispatch --------------------------------------------------------------------------------

    async def handle(self, request: httpx.Request) -> httpx.Response:
        method, path = request.method, request.url.path
        self.requests.append((method, path))
        self.urls.append(request.url)
        for (m, prefix), queue in self.scripted.items():
            if m == method and path.startswith(prefix) and queue:
                failure = queue.pop(0)
                if isinstance(failure, httpx.Response):
                    return failure
                if isinstance(failure, type):
                    raise failure("scripted failure", request=request)
                raise failure
        body: Any = json.loads(request.content) if request.content else None
        if path == "/v1/auth/anonymous" and method == "POST":
            return self._session(self._new_user())
        if path == "/v1/auth/refresh" and method == "POST":
            return self._refresh(body)
        if path == "/v1/auth/logout" and method == "POST":
            token = self.refresh_tokens.get(body["refreshToken"])
            if token:
                self.revoked_families.add(token.family)
            return httpx.Response(204)
        user_id = self.access.get(request.headers.get("authorization", "").removeprefix("Bearer "))
        if user_id is None:
            return await self._unauthorized()
        if path == "/v1/bookmarks/delta":
            return self._delta(user_id, request.url.params)
        if path.startswith("/v1/bookmarks/"):
            rest = path.removeprefix("/v1/bookmarks/")
            if rest.endswith("/collections"):
                bookmark_id = rest.removesuffix("/collections")
                current = self.bookmarks.get(user_id, {}).get(bookmark_id)
                if current is None or current.get("_deleted"):
                    return error(404, "not-found")
                self._upsert(user_id, bookmark_id, {"collectionIds": body["collectionIds"]})
                return httpx.Response(204)
            if method == "PUT":
                if not str(body.get("url", "")).startswith(("http://", "https://")):
                    return error(400, "invalid-url", "url must be http(s)")
                record = self._upsert(user_id, rest, body)
                return httpx.Response(200, json={"data": self._public(record)})
            if method == "DELETE":
                self._delete(user_id, rest)
                return httpx.Response(204)
        if path == "/v1/me/settings":
            if method == "PATCH":
                self.settings[user_id] = bool(body["useAi"])
            return httpx.Response(200, json={"useAi": self.settings.get(user_id, False)})
        if path == "/v1/enrichment/enqueue":
            if not self.settings.get(user_id, False):
                return error(403, "consent-required")
            return httpx.Response(202, json={"accepted": True, "status": "pending"})
        return error(404, "not-found")

    async def _unauthorized(self) -> httpx.Response:
        self.unauthorized_answers += 1
        if self.hold_unauthorized:
            event = asyncio.Event()
            self._held.append(event)
            if len(self._held) >= self.hold_unauthorized:
                for held in self._held:
                    held.set()
            await event.wait()
        return error(401, "unauthorized", headers={"WWW-Authenticate": "Bearer"})

    # -- auth ------------------------------------------------------------------------------------

    def _new_user(self) -> str:
        user_id = str(uuid.uuid4())
        self.users[user_id] = {
            "id": user_id,
            "isAnonymous": True,
            "displayName": None,
            "email": None,
            "photoUrl": None,
            "isPro": False,
        }
        return user_id

    def _session(self, user_id: str, family: str | None = None) -> httpx.Response:
        access = fake_jwt(user_id, lifetime=self.token_lifetime)
        refresh = uuid.uuid4().hex
        self.access[access] = user_id
        self.refresh_tokens[refresh] = Refresh(user_id, family or uuid.uuid4().hex)
        return httpx.Response(200, json={"accessToken": access, "refreshToken": refresh, "user": self.users[user_id]})

    def _refresh(self, body: dict[str, Any]) -> httpx.Response:
        self.refresh_calls += 1
        token = self.refresh_tokens.get(body.get("refreshToken", ""))
        if token is None or token.family in self.revoked_families:
            return error(401, "invalid-refresh-token")
        if token.used:
            self.reuse_detected += 1
            self.revoked_families.add(token.family)
            return error(401, "invalid-refresh-token")
        token.used = True
        return self._session(token.user_id, token.family)

    # -- bookmarks -------------------------------------------------------------------------------

    def _touch(self, user_id: str, record: dict[str, Any]) -> None:
        tick = next(self._clock)
        record["updatedAt"] = f"2030-01-01T00:00:00.{tick:06d}Z"
        self.positions[(user_id, record["clientBookmarkId"])] = tick

    def _upsert(self, user_id: str, bookmark_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        records = self.bookmarks.setdefault(user_id, {})
        record = records.get(bookmark_id)
        if record is None:
            record = {
                "ownerUid": user_id,
                "clientBookmarkId": bookmark_id,
                "url": "",
                "normalizedUrl": "",
                "domain": "",
                "title": None,
                "description": None,
                "thumbnailUrl": None,
                "summary": None,
                "saveWhy": None,
                "tags": [],
                "enrichmentStatus": "pending",
                "snapshotStatus": "pending",
                "lastErrorCode": None,
                "isFavorite": False,
                "collectionIds": [],
                "notes": None,
                "clientSavedAt": None,
                "lastOpenedAt": None,
                "createdAt": "2030-01-01T00:00:00Z",
                "enrichedAt": None,
            }
            records[bookmark_id] = record
        allowed = {
            "url",
            "clientSavedAt",
            "title",
            "description",
            "thumbnailUrl",
            "isFavorite",
            "notes",
            "lastOpenedAt",
            "collectionIds",
        }
        record.update({k: v for k, v in fields.items() if k in allowed})
        if "url" in fields:
            record["normalizedUrl"] = fields["url"]
            record["domain"] = httpx.URL(fields["url"]).host.removeprefix("www.")
        record.pop("_deleted", None)
        self._touch(user_id, record)
        return record

    def _delete(self, user_id: str, bookmark_id: str) -> None:
        records = self.bookmarks.setdefault(user_id, {})
        record = records.setdefault(bookmark_id, {"clientBookmarkId": bookmark_id})
        record["_deleted"] = True
        self._touch(user_id, record)

    @staticmethod
    def _public(record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record.items() if not k.startswith("_")}

    def visible(self, user_id: str) -> dict[str, dict[str, Any]]:
        return {bid: self._public(r) for bid, r in self.bookmarks.get(user_id, {}).items() if not r.get("_deleted")}

    def _delta(self, user_id: str, params: httpx.QueryParams) -> httpx.Response:
        cursor = params.get("cursor")
        limit = int(params.get("limit", "200"))
        if cursor and not cursor.startswith("c"):
            return error(400, "invalid-cursor")
        after = int(cursor[1:]) if cursor else 0
        stream = sorted((pos, bid) for (uid, bid), pos in self.positions.items() if uid == user_id and pos > after)
        page = stream[:limit]
        records = self.bookmarks.get(user_id, {})
        upserts = [self._public(records[bid]) for _, bid in page if not records[bid].get("_deleted")]
        tombstones = [
            {"clientBookmarkId": bid, "deletedAt": records[bid]["updatedAt"]}
            for _, bid in page
            if records[bid].get("_deleted")
        ]
        next_cursor = f"c{page[-1][0]}" if len(stream) > limit else None
        return httpx.Response(
            200,
            json={"data": {"cursor": cursor, "nextCursor": next_cursor, "upserts": upserts, "tombstones": tombstones}},
        )
