"""The public route table: which upstream owns a path and what the edge checks before proxying.

Each entry becomes one route of the gateway app, so the access log and the request metrics carry its
template (``/v1/bookmarks/{clientBookmarkId}``), never the raw path. Entries are tried in order: the
exact endpoints of the contract first, then a ``{rest:path}`` catch-all per owned prefix, so an
endpoint added upstream is reachable without a gateway release (and its metrics stay low-cardinality).
Anything not in this table, ``/internal/*`` above all, is answered 404 by the gateway itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum


class AuthMode(StrEnum):
    REQUIRED = "required"  # a valid, non-denied Bearer token or 401
    OPTIONAL = "optional"  # verified only when an Authorization header is present
    NONE = "none"  # not checked here: public, or authenticated by the upstream (X-Admin-Token)


class Effect(StrEnum):
    """What the gateway must learn from a proxied response (see ``api.routes``)."""

    ACCOUNT_DELETION = "account-deletion"  # DELETE answered 204: deny the caller at once
    IDENTITY_LINK = "identity-link"  # a link may merge the caller away: deny it at once


@dataclass(frozen=True, slots=True)
class RouteSpec:
    template: str
    upstream: str
    auth: AuthMode
    effect: Effect | None = None
    image: bool = False
    """Public pictures a page shows by the dozen (``<img>`` sends no token): their own per-IP bucket."""
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", _compile(self.template))

    def matches(self, path: str) -> bool:
        return self.regex.fullmatch(path) is not None


def _compile(template: str) -> re.Pattern[str]:
    """Starlette's path syntax: ``{name}`` is one segment, ``{name:path}`` the rest of the path."""
    pattern = ""
    for literal, name, convertor in re.findall(r"([^{]*)(?:\{(\w+)(?::(\w+))?\})?", template):
        pattern += re.escape(literal)
        if name:
            pattern += ".*" if convertor == "path" else "[^/]+"
    return re.compile(pattern)


AUTH, BOOKMARKS, ENRICHMENT = "auth", "bookmarks", "enrichment"
UPSTREAMS: tuple[str, ...] = (AUTH, BOOKMARKS, ENRICHMENT)

_R, _O, _N = AuthMode.REQUIRED, AuthMode.OPTIONAL, AuthMode.NONE

ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("/v1/auth/anonymous", AUTH, _N),
    RouteSpec("/v1/auth/refresh", AUTH, _N),
    RouteSpec("/v1/auth/logout", AUTH, _N),
    RouteSpec("/v1/auth/jwks", AUTH, _N),
    RouteSpec("/v1/auth/oauth/idp-a", AUTH, _O, Effect.IDENTITY_LINK),
    RouteSpec("/v1/auth/oauth/idp-b", AUTH, _O, Effect.IDENTITY_LINK),
    RouteSpec("/v1/auth/pairing", AUTH, _R),
    # The new device has no token yet: the code is its credential (limited per client IP by auth too).
    RouteSpec("/v1/auth/pairing/claim", AUTH, _N),
    RouteSpec("/v1/auth/{rest:path}", AUTH, _R),
    RouteSpec("/v1/me", AUTH, _R),
    RouteSpec("/v1/me/settings", AUTH, _R),
    RouteSpec("/v1/me/{rest:path}", AUTH, _R),
    RouteSpec("/v1/account", AUTH, _R, Effect.ACCOUNT_DELETION),
    RouteSpec("/v1/admin/users/{userId}/subscription", AUTH, _N),
    RouteSpec("/v1/admin/{rest:path}", AUTH, _N),
    RouteSpec("/v1/bookmarks/delta", BOOKMARKS, _R),
    # GET: search; any other method is the bookmark whose id is "search" (same upstream, same checks).
    RouteSpec("/v1/bookmarks/search", BOOKMARKS, _R),
    RouteSpec("/v1/bookmarks/lookup", BOOKMARKS, _R),
    RouteSpec("/v1/bookmarks/bulk", BOOKMARKS, _R),  # POST: a bulk change; any other method a bookmark
    RouteSpec("/v1/bookmarks/bulk/undo", BOOKMARKS, _R),  # like search: GET here, any other method a bookmark
    RouteSpec("/v1/bookmarks/{clientBookmarkId}", BOOKMARKS, _R),
    RouteSpec("/v1/bookmarks/{clientBookmarkId}/collections", BOOKMARKS, _R),
    # The link check queue is enrichment's (docs/decisions/0139-link-health.md).
    RouteSpec("/v1/bookmarks/{clientBookmarkId}/check-link", ENRICHMENT, _R),
    RouteSpec("/v1/bookmarks/{rest:path}", BOOKMARKS, _R),
    RouteSpec("/v1/collections/{collectionId}", BOOKMARKS, _R),
    RouteSpec("/v1/collections/{rest:path}", BOOKMARKS, _R),
    RouteSpec("/v1/highlights/{highlightId}", BOOKMARKS, _R),
    RouteSpec("/v1/duplicates", BOOKMARKS, _R),
    RouteSpec("/v1/duplicates/merge", BOOKMARKS, _R),
    RouteSpec("/v1/trash", BOOKMARKS, _R),
    RouteSpec("/v1/trash/restore", BOOKMARKS, _R),
    RouteSpec("/v1/trash/{clientBookmarkId}", BOOKMARKS, _R),
    RouteSpec("/v1/trash/{clientBookmarkId}/restore", BOOKMARKS, _R),
    RouteSpec("/v1/imports", BOOKMARKS, _R),  # its body limit: MAX_BODY_BYTES_BY_ROUTE (50 MiB)
    RouteSpec("/v1/imports/{importId}", BOOKMARKS, _R),
    RouteSpec("/v1/imports/{importId}/report", BOOKMARKS, _R),
    RouteSpec("/v1/imports/{rest:path}", BOOKMARKS, _R),
    RouteSpec("/v1/enrichment/enqueue", ENRICHMENT, _R),
    RouteSpec("/v1/enrichment/status", ENRICHMENT, _R),
    RouteSpec("/v1/enrichment/quota", ENRICHMENT, _R),
    RouteSpec("/v1/enrichment/capture", ENRICHMENT, _R),  # its body limit: MAX_BODY_BYTES_BY_ROUTE (16 MiB)
    RouteSpec("/v1/enrichment/{rest:path}", ENRICHMENT, _R),
    RouteSpec("/v1/previews", ENRICHMENT, _R),
    # Named by the hash of their bytes and re-encoded: public, so an <img> can show them without a token.
    RouteSpec("/v1/previews/images/{name}", ENRICHMENT, _N, image=True),
    RouteSpec("/v1/exports", BOOKMARKS, _R),  # streamed through (proxy.UpstreamStreamingResponse)
)

# Methods proxied on every route; the upstream answers 405 for the ones it does not serve.
PROXY_METHODS: tuple[str, ...] = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def route_for_path(path: str) -> RouteSpec | None:
    """The entry that serves ``path`` (a concrete path or an OpenAPI template), or None."""
    for spec in ROUTES:
        if spec.matches(path):
            return spec
    return None


def has_dot_segments(path: str) -> bool:
    """``.``/``..`` segments are refused: an upstream that normalised them could be walked to /internal."""
    return any(segment in (".", "..") for segment in path.split("/"))
