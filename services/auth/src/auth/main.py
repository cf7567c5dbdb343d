"""Auth service application: ``create_app()`` and its lifespan (nothing is built at import)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from auth import service
from auth.api.routes import admin_router, internal_router, me_router, router
from auth.domain.keys import KeyRing
from auth.domain.ratelimit import SlidingWindowLimiter
from auth.domain.tokens import TokenIssuer
from auth.keys import LocalJwks, load_keys_from_dir
from auth.providers import IdentityProviders
from auth.settings import Settings
from common.app import create_service_app
from common.auth import AccessTokenVerifier
from common.db import SessionFactory
from common.runtime import service_backbone
from common.tracing import setup_tracing

SERVICE = "auth"
PRUNE_INTERVAL_SECONDS = 3600.0

log = logging.getLogger("auth.main")


async def _signing_keys(settings: Settings, sessions: SessionFactory) -> KeyRing:
    if settings.signing_keys_dir is not None:
        return load_keys_from_dir(settings.signing_keys_dir)
    return await service.load_signing_keys(sessions=sessions)


async def _prune_forever(sessions: SessionFactory) -> None:
    """Expired refresh tokens and pairing codes are useless but would otherwise accumulate."""
    while True:
        try:
            while await service.prune_refresh_tokens(sessions=sessions) > 0:
                pass
            while await service.prune_pairing_codes(sessions=sessions) > 0:
                pass
        except Exception as exc:  # database away: try again next round
            log.warning("refresh-token pruning failed: %s", exc)
        await asyncio.sleep(PRUNE_INTERVAL_SECONDS)


def _serve_sessions(app: FastAPI, settings: Settings, keys: KeyRing, providers: IdentityProviders) -> None:
    """What the routes need to issue and check sessions, on ``app.state``."""
    app.state.settings = settings
    app.state.tokens = TokenIssuer(
        keys=keys,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        access_ttl_seconds=settings.access_token_ttl_seconds,
        refresh_ttl_seconds=settings.refresh_token_ttl_seconds,
    )
    app.state.providers = providers
    app.state.verifier = AccessTokenVerifier(
        jwks=LocalJwks(keys), issuer=settings.jwt_issuer, audience=settings.jwt_audience
    )
    app.state.anonymous_limiter = SlidingWindowLimiter(limit=settings.anonymous_rate_limit_per_minute)
    app.state.pairing_claim_limiter = SlidingWindowLimiter(limit=settings.pairing_claim_failures_per_minute)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    if problems := settings.production_problems():
        raise RuntimeError("; ".join(problems))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint, sample_ratio=settings.traces_sample_ratio)
        providers = IdentityProviders.from_settings(settings)
        try:
            async with service_backbone(
                app, service=SERVICE, settings=settings, database_url=settings.database_url
            ) as backbone:
                keys = await _signing_keys(settings, backbone.sessions)
                _serve_sessions(app, settings, keys, providers)
                backbone.tasks.start("refresh-token-pruner", _prune_forever(backbone.sessions))
                yield
        finally:
            await providers.aclose()

    routers: list[APIRouter] = [router, me_router, internal_router]
    if settings.admin_token is not None:
        # Without ADMIN_TOKEN the operator API does not exist at all: every path under it is a 404.
        routers.append(admin_router)
    return create_service_app(
        service=SERVICE,
        title="Auth service",
        lifespan=lifespan,
        routers=routers,
        settings=settings,
    )
