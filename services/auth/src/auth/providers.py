"""Verification of identity-provider ID tokens (idp-a, idp-b) against the providers' JWKS."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from auth.domain.errors import ProviderNotConfigured, ProviderUnreachable
from auth.domain.model import Identity, identity_from_claims
from auth.settings import PROVIDERS, IdentityProviderConfig, Settings
from common.errors import InvalidIdentityToken
from common.jwt import ASYMMETRIC_ALGORITHMS, JwksClient, JwksUnavailable, TokenError, verify_jwt

log = logging.getLogger("auth.providers")

# Clocks of phones and providers drift; a minute either way is the usual tolerance for ID tokens.
LEEWAY_SECONDS = 60


@dataclass(frozen=True, slots=True)
class IdentityVerifier:
    config: IdentityProviderConfig
    jwks: JwksClient

    async def verify(self, token: str) -> Identity:
        """The identity in a valid ID token; InvalidIdentityToken for anything else."""
        try:
            claims: dict[str, Any] = await verify_jwt(
                token,
                jwks=self.jwks,
                issuer=self.config.issuers,
                audience=self.config.audience,
                leeway_seconds=LEEWAY_SECONDS,
                algorithms=ASYMMETRIC_ALGORITHMS,
                required_claims=("iss", "aud", "sub", "iat", "exp"),
            )
        except TokenError as exc:
            log.info("identity token rejected", extra={"provider": self.config.name, "reason": str(exc)[:200]})
            # The provider's JWKS is unreachable: its outage (503, retry), not a bad token.
            if isinstance(exc, JwksUnavailable):
                raise ProviderUnreachable() from exc
            raise InvalidIdentityToken() from exc
        return identity_from_claims(self.config.name, claims)


class IdentityProviders:
    """The configured providers; an unconfigured one answers 503 ``unavailable``."""

    def __init__(self, verifiers: Mapping[str, IdentityVerifier]) -> None:
        self._verifiers = dict(verifiers)

    @classmethod
    def from_settings(cls, settings: Settings, *, http: httpx.AsyncClient | None = None) -> IdentityProviders:
        verifiers = {}
        for name in PROVIDERS:
            config = settings.identity_provider(name)
            if config is not None:
                verifiers[name] = IdentityVerifier(config=config, jwks=JwksClient(config.jwks_url, http=http))
        return cls(verifiers)

    def get(self, name: str) -> IdentityVerifier:
        verifier = self._verifiers.get(name)
        if verifier is None:
            raise ProviderNotConfigured()
        return verifier

    async def aclose(self) -> None:
        for verifier in self._verifiers.values():
            await verifier.jwks.aclose()
