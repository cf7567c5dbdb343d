"""The route table: which upstream and which edge check every public path gets."""

from __future__ import annotations

import pytest

from gateway.routing import AuthMode, Effect, has_dot_segments, route_for_path


@pytest.mark.parametrize(
    ("path", "template", "upstream", "auth"),
    [
        ("/v1/auth/anonymous", "/v1/auth/anonymous", "auth", AuthMode.NONE),
        ("/v1/auth/refresh", "/v1/auth/refresh", "auth", AuthMode.NONE),
        ("/v1/auth/logout", "/v1/auth/logout", "auth", AuthMode.NONE),
        ("/v1/auth/jwks", "/v1/auth/jwks", "auth", AuthMode.NONE),
        ("/v1/auth/oauth/idp-a", "/v1/auth/oauth/idp-a", "auth", AuthMode.OPTIONAL),
        ("/v1/auth/oauth/idp-b", "/v1/auth/oauth/idp-b", "auth", AuthMode.OPTIONAL),
        ("/v1/auth/pairing", "/v1/auth/pairing", "auth", AuthMode.REQUIRED),
        ("/v1/auth/pairing/claim", "/v1/auth/pairing/claim", "auth", AuthMode.NONE),
        ("/v1/auth/something-new", "/v1/auth/{rest:path}", "auth", AuthMode.REQUIRED),
        ("/v1/me", "/v1/me", "auth", AuthMode.REQUIRED),
        ("/v1/me/settings", "/v1/me/settings", "auth", AuthMode.REQUIRED),
        ("/v1/me/other/thing", "/v1/me/{rest:path}", "auth", AuthMode.REQUIRED),
        ("/v1/account", "/v1/account", "auth", AuthMode.REQUIRED),
        ("/v1/admin/users/42/subscription", "/v1/admin/users/{userId}/subscription", "auth", AuthMode.NONE),
        ("/v1/admin/anything", "/v1/admin/{rest:path}", "auth", AuthMode.NONE),
        ("/v1/bookmarks/delta", "/v1/bookmarks/delta", "bookmarks", AuthMode.REQUIRED),
        ("/v1/bookmarks/search", "/v1/bookmarks/search", "bookmarks", AuthMode.REQUIRED),
        ("/v1/bookmarks/lookup", "/v1/bookmarks/lookup", "bookmarks", AuthMode.REQUIRED),
        ("/v1/bookmarks/abc-1", "/v1/bookmarks/{clientBookmarkId}", "bookmarks", AuthMode.REQUIRED),
        (
            "/v1/bookmarks/abc/collections",
            "/v1/bookmarks/{clientBookmarkId}/collections",
            "bookmarks",
            AuthMode.REQUIRED,
        ),
        (
            "/v1/bookmarks/abc/check-link",
            "/v1/bookmarks/{clientBookmarkId}/check-link",
            "enrichment",
            AuthMode.REQUIRED,
        ),
        ("/v1/bookmarks/a/b/c", "/v1/bookmarks/{rest:path}", "bookmarks", AuthMode.REQUIRED),
        ("/v1/collections/c-1", "/v1/collections/{collectionId}", "bookmarks", AuthMode.REQUIRED),
        ("/v1/collections/c/x", "/v1/collections/{rest:path}", "bookmarks", AuthMode.REQUIRED),
        ("/v1/enrichment/enqueue", "/v1/enrichment/enqueue", "enrichment", AuthMode.REQUIRED),
        ("/v1/enrichment/status", "/v1/enrichment/status", "enrichment", AuthMode.REQUIRED),
        ("/v1/enrichment/quota", "/v1/enrichment/quota", "enrichment", AuthMode.REQUIRED),
        ("/v1/enrichment/capture", "/v1/enrichment/capture", "enrichment", AuthMode.REQUIRED),
        ("/v1/enrichment/jobs/1", "/v1/enrichment/{rest:path}", "enrichment", AuthMode.REQUIRED),
        ("/v1/exports", "/v1/exports", "bookmarks", AuthMode.REQUIRED),
        ("/v1/highlights/h-1", "/v1/highlights/{highlightId}", "bookmarks", AuthMode.REQUIRED),
    ],
)
def test_public_paths_map_to_their_owner(path: str, template: str, upstream: str, auth: AuthMode) -> None:
    spec = route_for_path(path)
    assert spec is not None
    assert (spec.template, spec.upstream, spec.auth) == (template, upstream, auth)


def test_openapi_templates_resolve_like_concrete_paths() -> None:
    spec = route_for_path("/v1/bookmarks/{clientBookmarkId}")
    assert spec is not None and spec.template == "/v1/bookmarks/{clientBookmarkId}"


@pytest.mark.parametrize(
    "path",
    [
        "/internal/users/1",
        "/internal/anti-entropy/bookmark-urls/republish",
        "/internal/anti-entropy/users/republish",
        "/v1/internal/x",
        "/healthz",
        "/metrics",
        "/v1",
        "/v1/",
        "/v1/meow",
        "/v1/accounts",
        "/v1/exports/x",
        "/v2/me",
    ],
)
def test_everything_else_is_not_proxied(path: str) -> None:
    assert route_for_path(path) is None


def test_special_effects() -> None:
    account = route_for_path("/v1/account")
    link = route_for_path("/v1/auth/oauth/idp-b")
    assert account is not None and account.effect is Effect.ACCOUNT_DELETION
    assert link is not None and link.effect is Effect.IDENTITY_LINK


def test_dot_segments_are_detected() -> None:
    assert has_dot_segments("/v1/bookmarks/../../internal/x")
    assert has_dot_segments("/v1/bookmarks/./x")
    assert not has_dot_segments("/v1/bookmarks/a..b")
