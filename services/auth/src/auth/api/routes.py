"""HTTP routes of the auth service (docs/api-guide.md, sections 2 and 9)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from auth import service
from auth.api.deps import (
    AdminOnly,
    AnonymousRateLimit,
    CurrentUser,
    Providers,
    Sessions,
    Tokens,
    authenticate,
)
from auth.api.schemas import (
    ERROR_RESPONSES,
    EntitlementsOut,
    IdpASignIn,
    IdpBSignIn,
    Jwks,
    LogoutRequest,
    PairingClaim,
    PairingCodeEnvelope,
    RefreshRequest,
    SessionOut,
    SettingsOut,
    SettingsPatch,
    SubscriptionUpdate,
    UserOut,
)
from auth.domain.errors import InvalidPairingCode
from auth.domain.model import PROVIDER_A, PROVIDER_B, IssuedSession
from auth.domain.ratelimit import SlidingWindowLimiter, client_key
from common import anti_entropy
from common.client_address import client_address
from common.errors import InvalidRequest, RateLimited
from common.handlers import describe_validation_errors

router = APIRouter(prefix="/v1/auth", tags=["auth"], responses=ERROR_RESPONSES)
me_router = APIRouter(prefix="/v1", tags=["me"], responses=ERROR_RESPONSES)
admin_router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=ERROR_RESPONSES, include_in_schema=False)
# Cluster-internal (ARCHITECTURE: read-your-writes calls); the gateway never routes /internal/*.
internal_router = APIRouter(prefix="/internal", tags=["internal"], include_in_schema=False)

UserId = Annotated[uuid.UUID, Path(description="The user's id.")]


def _session_response(issued: IssuedSession, response: Response) -> SessionOut:
    # Tokens must not be kept by any cache on the way (RFC 6749, section 5.1).
    response.headers["Cache-Control"] = "no-store"
    return SessionOut.of(issued)


@router.post("/anonymous", response_model=SessionOut, dependencies=[AnonymousRateLimit])
async def anonymous(sessions: Sessions, tokens: Tokens, response: Response) -> SessionOut:
    """Create an anonymous user and return its session (no body)."""
    return _session_response(await service.start_anonymous_session(sessions=sessions, tokens=tokens), response)


async def _oauth(
    request: Request,
    *,
    provider: str,
    id_token: str,
    link: bool,
    sessions: Sessions,
    tokens: Tokens,
    providers: Providers,
) -> IssuedSession:
    verifier = providers.get(provider)
    # A Bearer token matters only for linking; without link it is a plain sign-in (docs/api-guide.md, section 2).
    principal = await authenticate(request) if link else None
    identity = await verifier.verify(id_token)
    if principal is None:
        return await service.sign_in(sessions=sessions, tokens=tokens, identity=identity)
    return await service.link_identity(sessions=sessions, tokens=tokens, user_id=principal.user_id, identity=identity)


@router.post("/pairing", response_model=PairingCodeEnvelope, status_code=201)
async def create_pairing_code(user: CurrentUser, sessions: Sessions, response: Response) -> PairingCodeEnvelope:
    """A single-use code (5 minutes) that signs another device into this account."""
    response.headers["Cache-Control"] = "no-store"
    return PairingCodeEnvelope.of(await service.create_pairing_code(sessions=sessions, user_id=user.user_id))


@router.post("/pairing/claim", response_model=SessionOut)
async def claim_pairing_code(
    body: PairingClaim, request: Request, sessions: Sessions, tokens: Tokens, response: Response
) -> SessionOut:
    """Use a pairing code up: a session of the code's user for this new device (no token needed)."""
    limiter: SlidingWindowLimiter = request.app.state.pairing_claim_limiter
    key = client_key(client_address(request))
    # The attempt is counted before it is made, so concurrent guesses cannot pass the limit together;
    # only a refused code keeps its count.
    retry_after = limiter.hit(key)
    if retry_after is not None:
        raise RateLimited(
            "Too many wrong pairing codes from this address; wait a minute.", retry_after_seconds=retry_after
        )
    try:
        issued = await service.claim_pairing_code(sessions=sessions, tokens=tokens, typed_code=body.code)
    except InvalidPairingCode:
        raise
    except BaseException:
        limiter.forget_last(key)
        raise
    limiter.forget_last(key)
    return _session_response(issued, response)


@router.post("/oauth/idp-a", response_model=SessionOut)
async def oauth_idp_a(
    body: IdpASignIn, request: Request, sessions: Sessions, tokens: Tokens, providers: Providers, response: Response
) -> SessionOut:
    """Sign in with, or link, an identity of provider A."""
    issued = await _oauth(
        request,
        provider=PROVIDER_A,
        id_token=body.idToken,
        link=body.link is True,
        sessions=sessions,
        tokens=tokens,
        providers=providers,
    )
    return _session_response(issued, response)


@router.post("/oauth/idp-b", response_model=SessionOut)
async def oauth_idp_b(
    body: IdpBSignIn, request: Request, sessions: Sessions, tokens: Tokens, providers: Providers, response: Response
) -> SessionOut:
    """Sign in with, or link, an identity of provider B."""
    issued = await _oauth(
        request,
        provider=PROVIDER_B,
        id_token=body.identityToken,
        link=body.link is True,
        sessions=sessions,
        tokens=tokens,
        providers=providers,
    )
    return _session_response(issued, response)


@router.post("/refresh", response_model=SessionOut)
async def refresh(body: RefreshRequest, sessions: Sessions, tokens: Tokens, response: Response) -> SessionOut:
    """Rotate the refresh token: the presented one is used up, a new pair is returned."""
    issued = await service.refresh_session(sessions=sessions, tokens=tokens, refresh_token=body.refreshToken)
    return _session_response(issued, response)


@router.post("/logout", status_code=204)
async def logout(body: LogoutRequest, sessions: Sessions) -> Response:
    """Revoke the refresh token's family; 204 whether or not the token was known."""
    await service.logout(sessions=sessions, refresh_token=body.refreshToken)
    return Response(status_code=204)


@router.get("/jwks", response_model=Jwks)
async def jwks(request: Request) -> JSONResponse:
    """Public keys that verify access tokens: the current one and the previous one."""
    # Short enough that a rotation reaches every verifier within a minute; they refetch on unknown kids anyway.
    return JSONResponse(request.app.state.tokens.keys.jwks(), headers={"Cache-Control": "public, max-age=60"})


@me_router.get("/me", response_model=UserOut)
async def me(user: CurrentUser, sessions: Sessions) -> UserOut:
    """The current user (no envelope)."""
    return UserOut.of(await service.get_user(sessions=sessions, user_id=user.user_id))


@me_router.get("/me/settings", response_model=SettingsOut)
async def get_settings(user: CurrentUser, sessions: Sessions) -> SettingsOut:
    """The current user's settings."""
    current = await service.get_user(sessions=sessions, user_id=user.user_id)
    return SettingsOut(useAi=current.use_ai)


@me_router.patch("/me/settings", response_model=SettingsOut)
async def patch_settings(body: SettingsPatch, user: CurrentUser, sessions: Sessions) -> SettingsOut:
    """Change settings; effective for the very next request."""
    updated = await service.update_settings(sessions=sessions, user_id=user.user_id, use_ai=body.useAi)
    return SettingsOut(useAi=updated.use_ai)


@me_router.delete("/account", status_code=204)
async def delete_account(user: CurrentUser, sessions: Sessions) -> Response:
    """Permanently delete the account; its tokens stop working at once."""
    await service.delete_account(sessions=sessions, user_id=user.user_id)
    return Response(status_code=204)


@admin_router.put(
    "/users/{userId}/subscription",
    status_code=204,
    dependencies=[AdminOnly],
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": SubscriptionUpdate.model_json_schema()}},
        }
    },
)
async def put_subscription(userId: UserId, request: Request, sessions: Sessions) -> Response:  # noqa: N803
    """Set a user's plan (billing systems call this)."""
    # Parsed here rather than as a body parameter so that the admin token is checked before anything
    # about the body is said: without the token the caller learns nothing, not even "bad JSON".
    try:
        body = SubscriptionUpdate.model_validate_json(await request.body())
    except ValidationError as exc:
        raise InvalidRequest(describe_validation_errors([dict(e) for e in exc.errors()])) from exc
    await service.set_subscription(sessions=sessions, user_id=userId, is_pro=body.isPro)
    return Response(status_code=204)


@internal_router.get("/users/{userId}/entitlements", response_model=EntitlementsOut)
async def entitlements(userId: UserId, sessions: Sessions) -> EntitlementsOut:  # noqa: N803
    """Consent and plan as of now, for services that must see a change made a moment ago."""
    return EntitlementsOut.of(await service.get_entitlements(sessions=sessions, user_id=userId))


# --- anti-entropy of the projections of users (decision 0131) -------------------------------------------


@internal_router.post("/anti-entropy/users/digest", response_model=anti_entropy.RangeDigest)
async def user_digest(body: anti_entropy.RangeRequest, sessions: Sessions) -> anti_entropy.RangeDigest:
    """The digest of the next range of users (consent and plan, as ``user.updated`` carries them)."""
    return await service.user_digest(sessions=sessions, after=body.after, limit=body.limit)


@internal_router.post("/anti-entropy/users/records", response_model=anti_entropy.RecordHashes)
async def user_records(body: anti_entropy.RangeRecordsRequest, sessions: Sessions) -> anti_entropy.RecordHashes:
    """Per-user hashes of a range of users, and those changed lately."""
    return await service.user_hashes(
        sessions=sessions, after=body.after, up_to=body.upTo, settle_seconds=body.settleSeconds
    )


@internal_router.post("/anti-entropy/users/republish", response_model=anti_entropy.Republished)
async def republish_users(body: anti_entropy.UsersRepublishRequest, sessions: Sessions) -> anti_entropy.Republished:
    """Publish ``user.updated`` of these users again (new events), for a projection that lost it."""
    return anti_entropy.Republished(republished=await service.republish_users(sessions=sessions, user_ids=body.userIds))
