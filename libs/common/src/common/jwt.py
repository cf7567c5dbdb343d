"""JWT verification against a JWKS URL: cached keys, ``kid`` rotation, algorithms pinned.

Only asymmetric algorithms are accepted and the algorithm must match the key's type (and the JWK's own
``alg`` when it declares one), so neither ``alg: none`` nor an HS256 token "signed" with a public key
can pass. An unknown ``kid`` triggers one JWKS refetch (rate-limited) so key rotation needs no restart.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from typing import Any

import httpx
import jwt
from jwt import PyJWK

ASYMMETRIC_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"})
_KTY_FOR_ALG = {
    "RS256": "RSA",
    "RS384": "RSA",
    "RS512": "RSA",
    "PS256": "RSA",
    "ES256": "EC",
    "ES384": "EC",
    "EdDSA": "OKP",
}


class TokenError(Exception):
    """The token is not acceptable; the message says why (for logs, not for clients)."""


class JwksUnavailable(TokenError):
    """The keys could not be fetched: the issuer's outage (answer 503), not a bad token."""


class JwksClient:
    def __init__(
        self,
        url: str,
        *,
        http: httpx.AsyncClient | None = None,
        cache_seconds: float = 300.0,
        min_refetch_seconds: float = 5.0,
        timeout_seconds: float = 3.0,
    ) -> None:
        self.url = url
        self._http = http
        self._owns_http = http is None
        self.cache_seconds = cache_seconds
        self.min_refetch_seconds = min_refetch_seconds
        self.timeout_seconds = timeout_seconds
        self._keys: dict[str, PyJWK] = {}
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()

    async def aclose(self) -> None:
        if self._http is not None and self._owns_http:
            await self._http.aclose()

    async def _fetch(self) -> None:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.timeout_seconds)
        response = await self._http.get(self.url, timeout=self.timeout_seconds)
        response.raise_for_status()
        keys: dict[str, PyJWK] = {}
        for jwk in response.json().get("keys", []):
            kid = jwk.get("kid")
            if not kid or jwk.get("use", "sig") != "sig":
                continue
            try:
                keys[kid] = PyJWK.from_json(json.dumps(jwk))
            except jwt.PyJWKError:
                continue  # a key type we do not support must not break the others
        self._keys = keys
        self._fetched_at = time.monotonic()

    async def get_key(self, kid: str) -> PyJWK:
        now = time.monotonic()
        stale = now - self._fetched_at > self.cache_seconds
        if kid in self._keys and not stale:
            return self._keys[kid]
        async with self._lock:
            now = time.monotonic()
            if kid in self._keys and now - self._fetched_at <= self.cache_seconds:
                return self._keys[kid]
            if stale or now - self._fetched_at >= self.min_refetch_seconds:
                try:
                    await self._fetch()
                except (httpx.HTTPError, ValueError) as exc:
                    if kid in self._keys:  # serve a known key through a JWKS outage
                        return self._keys[kid]
                    raise JwksUnavailable(f"cannot fetch JWKS: {exc}") from exc
        if kid not in self._keys:
            raise TokenError(f"unknown kid {kid!r}")
        return self._keys[kid]


async def verify_jwt(
    token: str,
    *,
    jwks: JwksClient,
    issuer: str | Iterable[str],
    audience: str,
    leeway_seconds: float = 0,
    algorithms: Iterable[str] = ASYMMETRIC_ALGORITHMS,
    required_claims: Iterable[str] = ("exp", "iat", "sub"),
) -> dict[str, Any]:
    """Verify signature, algorithm, issuer, audience, expiry and not-before; return the claims."""
    allowed = frozenset(algorithms) & ASYMMETRIC_ALGORITHMS
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise TokenError(f"malformed token: {exc}") from exc
    alg = header.get("alg")
    kid = header.get("kid")
    # A hostile header may carry any JSON here (a list is not even hashable): strings only.
    if not isinstance(alg, str) or alg not in allowed:
        raise TokenError(f"algorithm {str(alg)[:40]!r} not allowed")
    if not isinstance(kid, str) or not kid:
        raise TokenError("token has no kid, or a kid that is not a string")
    key = await jwks.get_key(kid)
    if key.key_type != _KTY_FOR_ALG[alg]:
        raise TokenError(f"algorithm {alg} does not match key type {key.key_type}")
    declared = key._jwk_data.get("alg")
    if declared and declared != alg:
        raise TokenError(f"algorithm {alg} does not match the key's {declared}")
    issuers = [issuer] if isinstance(issuer, str) else list(issuer)
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key=key.key,
            algorithms=[alg],
            audience=audience,
            issuer=issuers,
            leeway=leeway_seconds,
            options={"require": list(required_claims)},
        )
    except jwt.PyJWTError as exc:
        raise TokenError(str(exc)) from exc
    return claims
