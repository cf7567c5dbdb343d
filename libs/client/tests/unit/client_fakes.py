"""An in-memory stand-in for the service, served to the client through ``httpx.MockTransport``.

It implements just what the client relies on (docs/api-guide.md): sessions with rotating,
reuse-detecting refresh tokens; bookmark PUT/DELETE/collections, collection PUT/DELETE (docs/api-guide.md, section 11: children move up, ids leave bookmarks) and highlight PUT/DELETE (following their bookmark into the trash and back) with server-side positions in one stream; cursor delta pages
with collections, highlights and their tombstones; the trash; duplicates and their merge; enrichment and settings stubs. ``script()`` injects failures for matching requests.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from bookmark_client.merge import CLIENT_FIELDS
from bookmark_client.models import Bookmark


def fake_jwt(sub: str, *, lifetime: float = 3600) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = time.time()
    claims = {"sub": sub, "iat": int(now), "exp": int(now + lifetime), "jti": uuid.uuid4().hex}
    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


def _instant(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


def duplicate_key(url: str) -> str:
    """The fake's normalized URL for duplicates: host lowercased without ``www.``, no fragment, no ``utm_*``."""
    parsed = httpx.URL(url)
    params = [(k, v) for k, v in parsed.params.multi_items() if not k.lower().startswith("utm_")]
    host = parsed.host.lower().removeprefix("www.")
    return str(parsed.copy_with(host=host, fragment=None, params=httpx.QueryParams(params)))


def error(status: int, code: str, message: str = "", headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "message": message or code}, headers=headers)


# The client's own bookkeeping on its Bookmark model, never on the wire.
_LOCAL_FIELDS = {"deleted", "deleted_at", "pending"}


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
    collections: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # user -> id -> record
    highlights: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # user -> id -> record
    # (user, "b", "c" or "h", id) -> stream position: bookmarks, collections and highlights share one stream.
    positions: dict[tuple[str, str, str], int] = field(default_factory=dict)
    settings: dict[str, bool] = field(default_factory=dict)
    link_checks: list[str] = field(default_factory=list)  # bookmark ids of check-link requests
    requests: list[tuple[str, str]] = field(default_factory=list)
    urls: list[httpx.URL] = field(default_factory=list)
    refresh_calls: int = 0
    unauthorized_answers: int = 0
    token_lifetime: float = 3600
    max_restored: int = 10_000  # per POST /v1/trash/restore, as the server's bound
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

    def server_collection(self, user_id: str, collection_id: str, **fields: Any) -> dict[str, Any]:
        """A collection write by "another device"."""
        return self._put_collection(user_id, collection_id, fields)

    def server_delete_collection(self, user_id: str, collection_id: str) -> None:
        self._delete_collection(user_id, collection_id)

    def server_highlight(self, user_id: str, highlight_id: str, **fields: Any) -> dict[str, Any]:
        """A highlight write by "another device" (``anchor``: the server's re-anchoring, set as given)."""
        anchor = fields.pop("anchor", None)
        response = self._highlight_request(user_id, "PUT", highlight_id, fields)
        assert response.status_code == 200, response.text
        record = self.highlights[user_id][highlight_id]
        if anchor is not None:
            record["anchor"] = anchor
            self._touch(user_id, record)
        return record

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
        if path == "/v1/exports":
            return self._export(user_id, request.url.params.get("format", ""))
        if path.startswith("/v1/duplicates"):
            return self._duplicates_request(user_id, method, path.removeprefix("/v1/duplicates"), body, request)
        if path == "/v1/trash" or path.startswith("/v1/trash/"):
            return self._trash_request(user_id, method, path.removeprefix("/v1/trash").strip("/"), body, request)
        if path.startswith("/v1/collections/"):
            return self._collection_request(user_id, method, path.removeprefix("/v1/collections/"), body)
        if path.startswith("/v1/highlights/"):
            return self._highlight_request(user_id, method, path.removeprefix("/v1/highlights/"), body)
        if path.startswith("/v1/bookmarks/"):
            rest = path.removeprefix("/v1/bookmarks/")
            if rest == "lookup" and method == "GET":
                wanted = request.url.params.get("url")
                for record in self.visible(user_id).values():
                    if wanted in (record.get("url"), record.get("normalizedUrl")):
                        return httpx.Response(200, json={"data": record})
                return error(404, "not-found")
            if rest.endswith("/check-link") and method == "POST":
                current = self.bookmarks.get(user_id, {}).get(rest.removesuffix("/check-link"))
                if current is None or current.get("_deleted"):
                    return error(404, "not-found")
                self.link_checks.append(rest.removesuffix("/check-link"))
                return httpx.Response(202, json={"accepted": True})
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

    def _export(self, user_id: str, fmt: str) -> httpx.Response:
        """A JSON export sent in pieces (one per bookmark), like the real endpoint streams it."""
        if fmt not in ("json", "csv", "netscape"):
            return error(400, "invalid-request", "format must be one of: netscape, json, csv.")
        records = list(self.visible(user_id).values())

        async def pieces() -> Any:
            yield b'{"version": 1, "collections": [], "bookmarks": ['
            for i, record in enumerate(records):
                yield (b"," if i else b"") + json.dumps(record).encode()
            yield b"]}"

        return httpx.Response(200, content=pieces(), headers={"content-type": "application/json"})

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
        if "clientBookmarkId" in record:
            self.positions[(user_id, "b", record["clientBookmarkId"])] = tick
        elif "bookmarkId" in record:
            self.positions[(user_id, "h", record["id"])] = tick
        else:
            self.positions[(user_id, "c", record["id"])] = tick

    def _upsert(self, user_id: str, bookmark_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        records = self.bookmarks.setdefault(user_id, {})
        record = records.get(bookmark_id)
        if record is None:
            # Every field of the resource at its default (the client's model declares them all), then
            # what the server sets on create.
            record = {
                **Bookmark(client_bookmark_id=bookmark_id).model_dump(by_alias=True, exclude=_LOCAL_FIELDS),
                "ownerUid": user_id,
                "url": "",
                "normalizedUrl": "",
                "domain": "",
                "createdAt": "2030-01-01T00:00:00Z",
            }
            records[bookmark_id] = record
        allowed = set(CLIENT_FIELDS)
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
        record.pop("_purged", None)
        self._touch(user_id, record)
        record["_deletedAt"] = record["updatedAt"]
        for highlight in self.highlights.get(user_id, {}).values():  # its highlights go with it
            if highlight["bookmarkId"] == bookmark_id and not highlight.get("_deleted"):
                highlight["_deleted"] = highlight["_withBookmark"] = True
                self._touch(user_id, highlight)

    @staticmethod
    def _public(record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record.items() if not k.startswith("_")}

    def visible(self, user_id: str) -> dict[str, dict[str, Any]]:
        return {bid: self._public(r) for bid, r in self.bookmarks.get(user_id, {}).items() if not r.get("_deleted")}

    def visible_collections(self, user_id: str) -> dict[str, dict[str, Any]]:
        return {cid: self._public(r) for cid, r in self.collections.get(user_id, {}).items() if not r.get("_deleted")}

    # -- trash (docs/api-guide.md: deleted bookmarks kept until purged) ------------------------------

    def trashed(self, user_id: str) -> list[dict[str, Any]]:
        """The user's trash, most recently deleted first (deleted bookmarks the server had, not purged)."""
        records = [
            r
            for r in self.bookmarks.get(user_id, {}).values()
            if r.get("_deleted") and not r.get("_purged") and "url" in r
        ]
        return sorted(records, key=lambda r: r["_deletedAt"], reverse=True)

    def _trash_request(self, user_id: str, method: str, rest: str, body: Any, request: httpx.Request) -> httpx.Response:
        trash = self.trashed(user_id)
        if method == "GET" and rest == "":
            limit = int(request.url.params.get("limit", "50"))
            start = int(request.url.params.get("cursor", "t0")[1:])
            page = trash[start : start + limit]
            items = [
                {
                    "bookmark": self._public(r),
                    "deletedAt": r["_deletedAt"],
                    "purgeAt": r["_deletedAt"].replace("2030-01-01", "2030-01-31"),
                    "mergedInto": r.get("_mergedInto"),
                }
                for r in page
            ]
            more = f"t{start + limit}" if start + limit < len(trash) else None
            return httpx.Response(200, json={"data": {"items": items, "nextCursor": more}})
        if method == "POST" and rest == "restore":
            since = body["deletedSince"]
            restored = [r for r in trash if _instant(r["_deletedAt"]) >= _instant(since)][: self.max_restored]
            for record in restored:
                self._restore(user_id, record)
            return httpx.Response(200, json={"data": {"restored": len(restored)}})
        if method == "POST" and rest.endswith("/restore"):
            found = [r for r in trash if r["clientBookmarkId"] == rest.removesuffix("/restore")]
            if not found:
                return error(404, "not-found", "Not in the trash.")
            return httpx.Response(200, json={"data": self._public(self._restore(user_id, found[0]))})
        if method == "DELETE":
            for record in trash:
                if rest in ("", record["clientBookmarkId"]):
                    record["_purged"] = True
            return httpx.Response(204)
        return error(405, "method-not-allowed")

    def _restore(self, user_id: str, record: dict[str, Any]) -> dict[str, Any]:
        record.pop("_mergedInto", None)
        record.pop("_deleted", None)
        record.pop("_deletedAt", None)
        self._touch(user_id, record)
        for highlight in self.highlights.get(user_id, {}).values():  # and come back with it
            if highlight["bookmarkId"] == record["clientBookmarkId"] and highlight.pop("_withBookmark", False):
                highlight.pop("_deleted", None)
                self._touch(user_id, highlight)
        return record

    # -- duplicates (docs/api-guide.md section 14) --------------------------------------------------

    def duplicate_groups(self, user_id: str) -> list[dict[str, Any]]:
        """Live bookmarks sharing a key, each group oldest save first, the group with the newest member first."""
        groups: dict[str, list[dict[str, Any]]] = {}
        for record in self.bookmarks.get(user_id, {}).values():
            if not record.get("_deleted") and record.get("url"):
                groups.setdefault(duplicate_key(record["url"]), []).append(record)

        def saved(r: dict[str, Any]) -> str:
            return str(r.get("clientSavedAt") or r["createdAt"])

        found = [
            {"key": key, "bookmarks": sorted(members, key=saved)} for key, members in groups.items() if len(members) > 1
        ]
        return sorted(found, key=lambda g: max(saved(r) for r in g["bookmarks"]), reverse=True)

    def _duplicates_request(
        self, user_id: str, method: str, rest: str, body: Any, request: httpx.Request
    ) -> httpx.Response:
        if method == "GET" and rest == "":
            groups = self.duplicate_groups(user_id)
            limit = int(request.url.params.get("limit", "20"))
            start = int(request.url.params.get("cursor", "g0")[1:])
            page = [
                {"key": g["key"], "bookmarks": [self._public(r) for r in g["bookmarks"]]}
                for g in groups[start : start + limit]
            ]
            more = f"g{start + limit}" if start + limit < len(groups) else None
            return httpx.Response(200, json={"data": {"groups": page, "nextCursor": more}})
        if method == "POST" and rest == "/merge":
            records = self.bookmarks.get(user_id, {})
            keep, merge = body["keep"], body["merge"]
            live = {bid: r for bid, r in records.items() if not r.get("_deleted") and r.get("url")}
            if keep not in live or keep in merge or any(m not in live for m in merge):
                return error(400, "invalid-request", "Not live bookmarks of yours, or keep is among merge.")
            kept = live[keep]
            if any(duplicate_key(live[m]["url"]) != duplicate_key(kept["url"]) for m in merge):
                return error(400, "invalid-request", "Not a duplicate of keep.")
            tags = list(kept.get("userTags") or [])
            for m in merge:
                tags += [t for t in live[m].get("userTags") or [] if t.lower() not in {x.lower() for x in tags}]
            kept["userTags"] = tags
            self._touch(user_id, kept)
            for m in merge:
                self._delete(user_id, m)
                records[m]["_mergedInto"] = keep
            return httpx.Response(200, json={"data": self._public(kept)})
        return error(405, "method-not-allowed")

    # -- collections -----------------------------------------------------------------------------

    def _collection_request(self, user_id: str, method: str, collection_id: str, body: Any) -> httpx.Response:
        if method == "PUT":
            parent = body.get("parentId") if "parentId" in body else None
            live = self.visible_collections(user_id)
            if parent is not None and (parent not in live or parent == collection_id):
                return error(400, "invalid-request", "parentId: unknown collection")
            record = self._put_collection(user_id, collection_id, body)
            return httpx.Response(200, json={"data": self._public(record)})
        if method == "DELETE":
            self._delete_collection(user_id, collection_id)
            return httpx.Response(204)
        return error(405, "method-not-allowed")

    def _put_collection(self, user_id: str, collection_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        records = self.collections.setdefault(user_id, {})
        record = records.get(collection_id)
        if record is None or record.get("_deleted"):
            record = {"id": collection_id, "name": "", "parentId": None, "createdAt": "2030-01-01T00:00:00Z"}
            records[collection_id] = record
        record.update({k: v for k, v in fields.items() if k in ("name", "parentId")})
        self._touch(user_id, record)
        return record

    def _delete_collection(self, user_id: str, collection_id: str) -> None:
        records = self.collections.setdefault(user_id, {})
        record = records.get(collection_id)
        if record is None or record.get("_deleted"):
            return
        record["_deleted"] = True
        self._touch(user_id, record)
        for child in records.values():
            if child.get("parentId") == collection_id and not child.get("_deleted"):
                child["parentId"] = record["parentId"]
                self._touch(user_id, child)
        for bookmark in self.bookmarks.get(user_id, {}).values():
            if collection_id in bookmark.get("collectionIds", []) and not bookmark.get("_deleted"):
                bookmark["collectionIds"] = [c for c in bookmark["collectionIds"] if c != collection_id]
                self._touch(user_id, bookmark)

    # -- highlights ------------------------------------------------------------------------------

    def visible_highlights(self, user_id: str) -> dict[str, dict[str, Any]]:
        return {hid: self._public(r) for hid, r in self.highlights.get(user_id, {}).items() if not r.get("_deleted")}

    def _highlight_request(self, user_id: str, method: str, highlight_id: str, body: Any) -> httpx.Response:
        records = self.highlights.setdefault(user_id, {})
        record = records.get(highlight_id)
        if method == "DELETE":
            if record is not None and not record.get("_deleted"):
                record["_deleted"] = True
                self._touch(user_id, record)
            elif record is not None:
                record.pop("_withBookmark", None)
            return httpx.Response(204)
        if method != "PUT":
            return error(405, "method-not-allowed")
        bookmark = self.bookmarks.get(user_id, {}).get(body["bookmarkId"])
        if bookmark is None or bookmark.get("_deleted"):
            return error(400, "invalid-request", "bookmarkId must name a live bookmark of yours")
        if record is not None and not record.get("_deleted"):
            for name in ("bookmarkId", "quote", "prefix", "suffix"):
                if body.get(name) is not None and body[name] != record[name]:
                    return error(400, "invalid-request", f"{name} cannot change after a highlight is created.")
            changed = {name: body[name] for name in ("color", "note") if body.get(name) is not None}
            if any(record[name] != value for name, value in changed.items()):
                record.update(changed)
                self._touch(user_id, record)
            return httpx.Response(200, json={"data": self._public(record)})
        if record is not None and record["bookmarkId"] != body["bookmarkId"]:
            return error(400, "invalid-request", "bookmarkId cannot change after a highlight is created.")
        created = record["createdAt"] if record is not None else f"2030-01-01T00:00:00.{len(self.positions):06d}Z"
        record = {
            "id": highlight_id,
            "bookmarkId": body["bookmarkId"],
            "quote": body["quote"].strip(),
            "prefix": body.get("prefix") or "",
            "suffix": body.get("suffix") or "",
            "start": body.get("start"),
            "end": body.get("end"),
            "color": body.get("color") or "yellow",
            "note": body.get("note") or "",
            "anchor": None,
            "createdAt": created,
        }
        records[highlight_id] = record
        self._touch(user_id, record)
        return httpx.Response(200, json={"data": self._public(record)})

    # -- delta -----------------------------------------------------------------------------------

    def _delta(self, user_id: str, params: httpx.QueryParams) -> httpx.Response:
        cursor = params.get("cursor")
        limit = int(params.get("limit", "200"))
        if cursor and not cursor.startswith("c"):
            return error(400, "invalid-cursor")
        after = int(cursor[1:]) if cursor else 0
        stream = sorted(
            (pos, kind, rid) for (uid, kind, rid), pos in self.positions.items() if uid == user_id and pos > after
        )
        page = stream[:limit]
        books = self.bookmarks.get(user_id, {})
        folders = self.collections.get(user_id, {})
        data: dict[str, Any] = {"cursor": cursor, "nextCursor": f"c{page[-1][0]}" if len(stream) > limit else None}
        data["upserts"] = [self._public(books[i]) for _, k, i in page if k == "b" and not books[i].get("_deleted")]
        data["tombstones"] = [
            {"clientBookmarkId": i, "deletedAt": books[i]["updatedAt"]}
            for _, k, i in page
            if k == "b" and books[i].get("_deleted")
        ]
        data["collections"] = [
            self._public(folders[i]) for _, k, i in page if k == "c" and not folders[i].get("_deleted")
        ]
        data["collectionTombstones"] = [
            {"id": i, "deletedAt": folders[i]["updatedAt"]}
            for _, k, i in page
            if k == "c" and folders[i].get("_deleted")
        ]
        marks = self.highlights.get(user_id, {})
        data["highlights"] = [self._public(marks[i]) for _, k, i in page if k == "h" and not marks[i].get("_deleted")]
        data["highlightTombstones"] = [
            {"id": i, "deletedAt": marks[i]["updatedAt"]} for _, k, i in page if k == "h" and marks[i].get("_deleted")
        ]
        return httpx.Response(200, json={"data": data})
