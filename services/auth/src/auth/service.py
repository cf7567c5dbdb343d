"""Auth use cases: each is one transaction that changes state and writes its events together.

Every use case that emits an event for a user first locks that user's row, so one user's events enter
the outbox in commit order and the relay publishes them in that order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from auth.domain import pairing
from auth.domain.errors import InvalidPairingCode, UserGone, UserNotFound
from auth.domain.keys import KeyRing, SigningKey, generate_signing_key
from auth.domain.model import Entitlements, Identity, IssuedPairingCode, IssuedSession, User
from auth.domain.tokens import TokenIssuer, hash_refresh_token, new_refresh_token
from auth.metrics import PAIRING_CODES, REFRESH_TOKEN_REUSE, SESSIONS_ISSUED
from auth.store import digests, queries, repository
from auth.store.repository import UserLock
from common import anti_entropy
from common.db import SessionFactory, transaction
from common.errors import IdentityAlreadyInUse, InvalidRefreshToken, RateLimited
from common.events import Event, UserDeleted, UserMerged
from common.outbox import add_events

log = logging.getLogger("auth.service")

SERVICE = "auth"


async def _locked_user(session: AsyncSession, user_id: uuid.UUID, mode: UserLock) -> User:
    row = await repository.lock_user(session, user_id, mode)
    if row is None:
        raise UserGone()
    return User.from_row(row)


async def _mint(session: AsyncSession, tokens: TokenIssuer, user: User, family_id: uuid.UUID) -> IssuedSession:
    refresh_token = new_refresh_token()
    await repository.insert_refresh_token(
        session,
        token_hash=hash_refresh_token(refresh_token),
        family_id=family_id,
        user_id=user.id,
        ttl_seconds=tokens.refresh_ttl_seconds,
    )
    return IssuedSession(access_token=tokens.access_token(user.id), refresh_token=refresh_token, user=user)


async def _new_session(session: AsyncSession, tokens: TokenIssuer, user: User) -> IssuedSession:
    """A session starting a new token family (one per sign-in)."""
    family_id = await repository.create_family(session, user.id)
    return await _mint(session, tokens, user, family_id)


async def _create_user(session: AsyncSession, *, identity: Identity | None) -> User:
    user = User(
        id=uuid.uuid4(),
        is_anonymous=identity is None,
        display_name=identity.display_name if identity else None,
        email=identity.email if identity else None,
        photo_url=identity.photo_url if identity else None,
        is_pro=False,
        use_ai=False,
    )
    await repository.create_user(session, user_id=user.id, is_anonymous=user.is_anonymous, identity=identity)
    if identity is not None:
        await repository.attach_identity(session, user.id, identity)
    await add_events(session, [user.updated_event()])
    return user


async def start_anonymous_session(*, sessions: SessionFactory, tokens: TokenIssuer) -> IssuedSession:
    """Create an anonymous user and its first session."""
    async with transaction(sessions) as session:
        user = await _create_user(session, identity=None)
        issued = await _new_session(session, tokens, user)
    SESSIONS_ISSUED.labels(SERVICE, "anonymous").inc()
    return issued


async def sign_in(*, sessions: SessionFactory, tokens: TokenIssuer, identity: Identity) -> IssuedSession:
    """Sign in with a verified identity: a session of its owner, created on first sign-in."""
    async with transaction(sessions) as session:
        await repository.lock_identity(session, identity.provider, identity.subject)
        owner = await repository.identity_owner(session, identity.provider, identity.subject)
        if owner is None:
            user = await _create_user(session, identity=identity)
        else:
            user = await _locked_user(session, owner, "FOR KEY SHARE")
        issued = await _new_session(session, tokens, user)
    SESSIONS_ISSUED.labels(SERVICE, identity.provider).inc()
    return issued


async def link_identity(
    *, sessions: SessionFactory, tokens: TokenIssuer, user_id: uuid.UUID, identity: Identity
) -> IssuedSession:
    """Attach a verified identity to the user; if another user owns it, merge an anonymous user into it."""
    async with transaction(sessions) as session:
        await repository.lock_identity(session, identity.provider, identity.subject)
        # FOR UPDATE: a merge deletes this user, and nothing may mint tokens for it meanwhile.
        current = await _locked_user(session, user_id, "FOR UPDATE")
        owner = await repository.identity_owner(session, identity.provider, identity.subject)
        if owner is None:
            await repository.attach_identity(session, current.id, identity)
            await repository.mark_linked(session, current.id, identity)
            user = await _locked_user(session, current.id, "FOR UPDATE")
            await add_events(session, [user.updated_event()])
            method = "link"
        elif owner == current.id:
            user, method = current, "link"
        elif current.is_anonymous:
            # The merge event is the owner's: lock it like any other event of the owner (see module doc).
            user = await _locked_user(session, owner, "FOR NO KEY UPDATE")
            await repository.delete_user(session, current.id)
            # Other services move the anonymous user's data to the owner, then purge it (see UserMerged).
            await add_events(session, [UserMerged(userId=owner, sourceUserId=current.id)])
            method = "merge"
        else:
            raise IdentityAlreadyInUse()
        issued = await _new_session(session, tokens, user)
    SESSIONS_ISSUED.labels(SERVICE, method).inc()
    return issued


async def refresh_session(*, sessions: SessionFactory, tokens: TokenIssuer, refresh_token: str) -> IssuedSession:
    """Rotate a refresh token: it is used up and a new pair of the same family is issued."""
    token_hash = hash_refresh_token(refresh_token)
    issued: IssuedSession | None = None
    reused_family: uuid.UUID | None = None
    async with transaction(sessions) as session:
        found = await repository.find_refresh_token(session, token_hash)
        if found is None:
            raise InvalidRefreshToken()
        row = await repository.lock_user(session, found["user_id"], "FOR KEY SHARE")
        family = await repository.lock_family(session, found["family_id"])
        if row is None or family is None or family["revoked_at"] is not None:
            raise InvalidRefreshToken()
        if await repository.use_refresh_token(session, token_hash):
            issued = await _mint(session, tokens, User.from_row(row), found["family_id"])
        else:
            again = await repository.find_refresh_token(session, token_hash)
            if again is None or again["used_at"] is None:
                raise InvalidRefreshToken()  # expired
            # Already rotated: the server cannot tell the legitimate client from a thief, so the whole
            # family dies (docs/api-guide.md, section 2), including a racing duplicate request's fresh pair.
            await repository.revoke_family(session, found["family_id"], "reuse")
            reused_family = found["family_id"]
    if issued is None:
        REFRESH_TOKEN_REUSE.labels(SERVICE).inc()
        log.warning("refresh token reuse; family revoked", extra={"family_id": str(reused_family)})
        raise InvalidRefreshToken()
    SESSIONS_ISSUED.labels(SERVICE, "refresh").inc()
    return issued


async def logout(*, sessions: SessionFactory, refresh_token: str) -> None:
    """Revoke the token's family if the token is known; say nothing either way (no token oracle)."""
    async with transaction(sessions) as session:
        await repository.revoke_family_of_token(session, hash_refresh_token(refresh_token), "logout")


async def create_pairing_code(*, sessions: SessionFactory, user_id: uuid.UUID) -> IssuedPairingCode:
    """A new code that signs a second device into the user; older live codes stay valid."""
    code = pairing.new_code()
    async with transaction(sessions) as session:
        # The user's row serializes its code issues, so two at once cannot both be the fifth.
        await _locked_user(session, user_id, "FOR NO KEY UPDATE")
        live, first_expiry = await repository.live_pairing_codes(session, user_id)
        if live >= pairing.MAX_LIVE_CODES:
            raise RateLimited(
                f"At most {pairing.MAX_LIVE_CODES} pairing codes can be live at once; wait for one to expire.",
                retry_after_seconds=math.ceil(first_expiry),
            )
        expires_at = await repository.insert_pairing_code(
            session, code_hash=pairing.hash_code(code), user_id=user_id, ttl_seconds=pairing.TTL_SECONDS
        )
    PAIRING_CODES.labels(SERVICE, "issued").inc()
    return IssuedPairingCode(code=pairing.display(code), expires_at=expires_at)


async def claim_pairing_code(*, sessions: SessionFactory, tokens: TokenIssuer, typed_code: str) -> IssuedSession:
    """Use a pairing code up: a session of a new token family (a new device) of the code's user."""
    code = pairing.canonical(typed_code)
    if code is None:
        PAIRING_CODES.labels(SERVICE, "refused").inc()
        raise InvalidPairingCode()
    async with transaction(sessions) as session:
        user_id = await repository.take_pairing_code(session, pairing.hash_code(code))
        row = await repository.lock_user(session, user_id, "FOR KEY SHARE") if user_id is not None else None
        if row is None:
            PAIRING_CODES.labels(SERVICE, "refused").inc()
            raise InvalidPairingCode()
        issued = await _new_session(session, tokens, User.from_row(row))
    PAIRING_CODES.labels(SERVICE, "claimed").inc()
    SESSIONS_ISSUED.labels(SERVICE, "pairing").inc()
    return issued


async def get_user(*, sessions: SessionFactory, user_id: uuid.UUID) -> User:
    """The user, or UserGone when it was deleted or merged away."""
    async with sessions() as session:
        row = await queries.user(session, user_id)
    if row is None:
        raise UserGone()
    return User.from_row(row)


async def update_settings(*, sessions: SessionFactory, user_id: uuid.UUID, use_ai: bool) -> User:
    """Set the user's AI consent; emits user.updated when it changed."""
    async with transaction(sessions) as session:
        user = await _locked_user(session, user_id, "FOR NO KEY UPDATE")
        if await repository.set_use_ai(session, user_id, use_ai):
            user = dataclasses.replace(user, use_ai=use_ai)
            await add_events(session, [user.updated_event()])
    return user


async def set_subscription(*, sessions: SessionFactory, user_id: uuid.UUID, is_pro: bool) -> User:
    """Set the user's plan (operator API); emits user.updated when it changed."""
    async with transaction(sessions) as session:
        row = await repository.lock_user(session, user_id, "FOR NO KEY UPDATE")
        if row is None:
            raise UserNotFound()
        user = User.from_row(row)
        if await repository.set_pro(session, user_id, is_pro):
            user = dataclasses.replace(user, is_pro=is_pro)
            await add_events(session, [user.updated_event()])
    return user


async def delete_account(*, sessions: SessionFactory, user_id: uuid.UUID) -> None:
    """Delete the user and every auth row of it; other services purge their data on user.deleted."""
    async with transaction(sessions) as session:
        await _locked_user(session, user_id, "FOR UPDATE")
        await repository.delete_user(session, user_id)
        await add_events(session, [UserDeleted(userId=user_id)])


async def get_entitlements(*, sessions: SessionFactory, user_id: uuid.UUID) -> Entitlements:
    """Consent and plan as of now (read-your-writes for other services)."""
    async with sessions() as session:
        row = await queries.user(session, user_id)
    if row is None:
        return Entitlements(exists=False, use_ai=False, is_pro=False)
    return Entitlements(exists=True, use_ai=bool(row["use_ai"]), is_pro=bool(row["is_pro"]))


async def load_signing_keys(*, sessions: SessionFactory) -> KeyRing:
    """The stored key ring: newest active key signs, the next newest still verifies.

    The first process to start on an empty database creates the first key; the advisory lock makes
    replicas starting together agree on it.
    """
    async with transaction(sessions) as session:
        await repository.lock_signing_keys(session)
        rows = await queries.signing_keys(session)
        active = [r for r in rows if r["retired_at"] is None]
        if active:
            current = SigningKey.from_pem(active[0]["private_pem"])
        else:
            # RSA generation takes tens of milliseconds: keep the event loop serving health checks.
            current = await asyncio.to_thread(generate_signing_key)
            await repository.insert_signing_key(session, kid=current.kid, private_pem=current.private_pem())
            log.info("created the first access-token signing key", extra={"kid": current.kid})
        older = next((r for r in rows if r["kid"] != current.kid), None)
        previous = SigningKey.from_pem(older["private_pem"]) if older is not None else None
    return KeyRing(current=current, previous=previous)


async def prune_refresh_tokens(*, sessions: SessionFactory, batch_size: int = 5000) -> int:
    """Delete one batch of expired refresh tokens and of families left without tokens."""
    async with transaction(sessions) as session:
        return await repository.prune_refresh_tokens(session, batch_size)


async def prune_pairing_codes(*, sessions: SessionFactory, batch_size: int = 5000) -> int:
    """Delete one batch of expired pairing codes."""
    async with transaction(sessions) as session:
        return await repository.prune_pairing_codes(session, batch_size)


# --- anti-entropy: what a projection of users compares itself with (common.anti_entropy) -------------


async def user_digest(*, sessions: SessionFactory, after: uuid.UUID | None, limit: int) -> anti_entropy.RangeDigest:
    """The digest of the next ``limit`` users after ``after`` (one snapshot); the range ends at the last."""
    async with transaction(sessions) as session:
        ids = await digests.next_ids(session, after=after, limit=limit)
        up_to = ids[-1] if ids else None
        count, xor = await digests.digest(session, after=after, up_to=up_to)
    return anti_entropy.RangeDigest(upTo=up_to, count=count, xor=xor, more=len(ids) == limit)


async def user_hashes(
    *, sessions: SessionFactory, after: uuid.UUID | None, up_to: uuid.UUID | None, settle_seconds: float
) -> anti_entropy.RecordHashes:
    """Per-user hashes of a range, and the users changed within ``settle_seconds``."""
    since = datetime.now(UTC) - timedelta(seconds=settle_seconds)
    async with transaction(sessions) as session:
        hashes = await digests.hashes(session, after=after, up_to=up_to)
        unsettled = await digests.changed_since(session, after=after, up_to=up_to, since=since)
    return anti_entropy.RecordHashes(hashes=hashes, unsettled=unsettled if settle_seconds else [])


async def republish_users(*, sessions: SessionFactory, user_ids: Sequence[uuid.UUID]) -> int:
    """Write ``user.updated`` with the current consent and plan of these users again (new events), each
    under its user's lock like every event of a user. A user that does not exist gets nothing: a
    ``user.deleted`` purges a library everywhere, and a restored auth database must never cause that."""
    events: list[Event] = []
    async with transaction(sessions) as session:
        for user_id in sorted(user_ids):
            row = await repository.lock_user(session, user_id, "FOR NO KEY UPDATE")
            if row is not None:
                events.append(User.from_row(row).updated_event())
        await add_events(session, events)
    return len(events)
