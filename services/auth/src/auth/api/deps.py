"""FastAPI dependencies as ``Annotated`` aliases."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request

from auth.domain.errors import AdminTokenInvalid
from auth.domain.ratelimit import SlidingWindowLimiter, client_key
from auth.domain.tokens import TokenIssuer
from auth.providers import IdentityProviders
from auth.settings import Settings
from common.auth import Principal
from common.client_address import client_address
from common.db import SessionFactory
from common.errors import NotFound, RateLimited


async def authenticate(request: Request) -> Principal:
    """The verified access token of the request (signature and claims; the user may be gone since)."""
    principal: Principal = await request.app.state.verifier.from_request(request)
    return principal


async def _sessions(request: Request) -> SessionFactory:
    sessions: SessionFactory = request.app.state.sessions
    return sessions


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _tokens(request: Request) -> TokenIssuer:
    tokens: TokenIssuer = request.app.state.tokens
    return tokens


async def _providers(request: Request) -> IdentityProviders:
    providers: IdentityProviders = request.app.state.providers
    return providers


async def _anonymous_rate_limit(request: Request) -> None:
    limiter: SlidingWindowLimiter = request.app.state.anonymous_limiter
    retry_after = limiter.hit(client_key(client_address(request)))
    if retry_after is not None:
        raise RateLimited("Too many anonymous sign-ups from this address; slow down.", retry_after_seconds=retry_after)


async def _admin(request: Request) -> None:
    settings: Settings = request.app.state.settings
    if settings.admin_token is None:
        raise NotFound()  # the operator API does not exist without a token
    provided = request.headers.get("x-admin-token", "").strip(" \t")  # optional whitespace is not the value
    expected = settings.admin_token.get_secret_value()
    if not hmac.compare_digest(provided.encode(), expected.encode()):
        raise AdminTokenInvalid()


# Every dependency is async: a plain ``def`` would run in FastAPI's thread pool, and the rate limiter's
# state must only be touched from the event loop.
CurrentUser = Annotated[Principal, Depends(authenticate)]
Sessions = Annotated[SessionFactory, Depends(_sessions)]
AppSettings = Annotated[Settings, Depends(_settings)]
Tokens = Annotated[TokenIssuer, Depends(_tokens)]
Providers = Annotated[IdentityProviders, Depends(_providers)]
AnonymousRateLimit = Depends(_anonymous_rate_limit)
AdminOnly = Depends(_admin)
