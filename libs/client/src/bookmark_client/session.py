"""The signed-in session: current tokens, and their rotation.

Refresh tokens are single-use and a reused one revokes the whole token family (docs/api-guide.md, section 2). So
a refresh must happen at most once per token, however many requests hit a 401 at the same moment and
however many processes share the profile: an asyncio lock covers the tasks of this process, the
store's :meth:`~bookmark_client.store.LocalStore.session_guard` covers other processes, and whoever
comes second finds the token already rotated and just uses the new one.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
from collections.abc import Callable

import httpx

from bookmark_client.errors import ApiError, NotSignedIn, Offline, SessionExpired
from bookmark_client.models import Session
from bookmark_client.store import LocalStore

__all__ = ["SessionManager", "refresh_margin", "token_expiry"]

# Refresh a little before the nominal expiry: the request still has to travel to the server.
EXPIRY_SKEW_SECONDS = 15.0
# How long closing waits for a refresh whose caller was cancelled (Ctrl-C) to store the new pair: enough
# for an answer already on its way, short enough that the interrupt still ends the command at once.
SETTLE_SECONDS = 2.0


def _claims(access_token: str) -> dict[str, object]:
    try:
        payload = access_token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError, binascii.Error, UnicodeDecodeError):
        return {}
    return claims if isinstance(claims, dict) else {}


def token_expiry(access_token: str) -> float | None:
    """The ``exp`` claim of a JWT, read without verification (only used to refresh ahead of time)."""
    exp = _claims(access_token).get("exp")
    return float(exp) if isinstance(exp, int | float) else None


def refresh_margin(access_token: str) -> float:
    """How long before ``exp`` to refresh: EXPIRY_SKEW_SECONDS, but at most a tenth of the token's life,
    so a server configured with very short-lived tokens does not get a refresh before every request."""
    claims = _claims(access_token)
    exp, iat = claims.get("exp"), claims.get("iat")
    if isinstance(exp, int | float) and isinstance(iat, int | float) and exp > iat:
        return min(EXPIRY_SKEW_SECONDS, (exp - iat) / 10)
    return EXPIRY_SKEW_SECONDS


class SessionManager:
    def __init__(self, store: LocalStore, http: httpx.AsyncClient, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._http = http
        self._clock = clock
        self._lock = asyncio.Lock()
        self._session: Session | None = None
        self._refreshing: asyncio.Future[Session] | None = None
        self.refresh_count = 0  # refreshes this manager performed against the server (diagnostics, tests)

    @property
    def session(self) -> Session | None:
        return self._session

    async def load(self) -> Session | None:
        self._session = await self._store.load_session()
        return self._session

    async def current(self) -> Session:
        if self._session is None:
            # Another process sharing the profile may have signed in since we loaded.
            await self.load()
        if self._session is None:
            raise NotSignedIn("Not signed in: sign in first.")
        return self._session

    async def access_token(self) -> str:
        """A usable access token; refreshed first when it is known to be (nearly) expired."""
        session = await self.current()
        expiry = token_expiry(session.access_token)
        if expiry is not None and expiry - refresh_margin(session.access_token) <= self._clock():
            session = await self.refresh(session.access_token)
        return session.access_token

    async def adopt(self, session: Session, *, keep_queue: bool) -> bool:
        """Store a session from a sign-in; returns True if the profile switched to another user."""
        async with self._lock:
            switched = await self._store.store_sign_in(session, keep_queue=keep_queue)
            self._session = session
        return switched

    async def forget(self) -> None:
        async with self._lock:
            await self._store.clear_session()
            self._session = None

    async def refresh(self, stale_access_token: str) -> Session:
        """Replace ``stale_access_token``; if someone already did, return their session instead.

        Raises :class:`SessionExpired` when the server refuses the refresh token (the stored session is
        then removed), :class:`Offline` when it cannot be reached (the session is kept).
        """
        async with self._lock:
            # Shielded: once the refresh request is sent the old token is spent, so the new pair must be
            # stored even if the caller is cancelled meanwhile, or the next refresh would be a reuse.
            self._refreshing = asyncio.ensure_future(self._refresh_locked(stale_access_token))
            return await asyncio.shield(self._refreshing)

    async def settle(self, grace: float = SETTLE_SECONDS) -> None:
        """Before the HTTP client and the store close: let a refresh that outlived its caller finish
        storing the new pair for up to ``grace`` seconds, then cancel it. Its outcome is nobody's to
        report any more (the caller is gone), so it is consumed here rather than logged as unretrieved."""
        refreshing, self._refreshing = self._refreshing, None
        if refreshing is None:
            return
        await asyncio.wait([refreshing], timeout=grace)
        if not refreshing.done():
            refreshing.cancel()
            await asyncio.wait([refreshing])
        if not refreshing.cancelled():
            refreshing.exception()

    async def _refresh_locked(self, stale_access_token: str) -> Session:
        expired: SessionExpired | None = None
        async with self._store.session_guard() as guard:
            stored = await guard.read()
            if stored is None:
                expired = NotSignedIn("Not signed in: sign in first.")
            elif stored.access_token != stale_access_token:
                fresh = stored  # rotated by another task or process while we waited
            else:
                try:
                    response = await self._http.post("/v1/auth/refresh", json={"refreshToken": stored.refresh_token})
                except httpx.TransportError as exc:
                    raise Offline(f"Cannot reach the server to refresh the session: {exc}") from exc
                if response.status_code == 401:
                    error = ApiError.from_response(response)
                    expired = SessionExpired(error.message, code=error.code)
                    await guard.write(None)
                elif response.is_error:
                    raise ApiError.from_response(response)
                else:
                    self.refresh_count += 1
                    fresh = Session.model_validate(response.json())
                    await guard.write(fresh)
        # Raised only after the guard committed: the cleared session must stay cleared.
        if expired is not None:
            self._session = None
            raise expired
        self._session = fresh
        return fresh
