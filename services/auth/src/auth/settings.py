"""Auth service configuration (environment only, docs/configuration.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator

from auth.domain import pairing
from common.settings import CommonSettings, default_database_url

PROVIDERS = ("idp-a", "idp-b")


@dataclass(frozen=True, slots=True)
class IdentityProviderConfig:
    """Where and how to verify one provider's identity tokens."""

    name: str
    jwks_url: str
    issuers: tuple[str, ...]
    audience: str


class Settings(CommonSettings):
    database_url: str = Field(default_database_url("auth"), validation_alias="DATABASE_URL_AUTH")
    host: str = Field("127.0.0.1", validation_alias="AUTH_HOST")
    port: int = Field(8081, validation_alias="AUTH_PORT")
    metrics_port: int = Field(9081, validation_alias="AUTH_METRICS_PORT")

    access_token_ttl_seconds: int = Field(900, gt=0, validation_alias="ACCESS_TOKEN_TTL_SECONDS")
    refresh_token_ttl_seconds: int = Field(2_592_000, gt=0, validation_alias="REFRESH_TOKEN_TTL_SECONDS")
    # 0 turns the limit off (load tests, the e2e stack).
    anonymous_rate_limit_per_minute: int = Field(20, ge=0, validation_alias="AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE")
    # Refused pairing-code claims per client address a minute; it cannot be turned off (it makes guessing
    # hopeless). The e2e stack raises it: every browser of its tests shares one address.
    pairing_claim_failures_per_minute: int = Field(
        pairing.MAX_REFUSED_CLAIMS_PER_MINUTE, ge=1, validation_alias="AUTH_PAIRING_CLAIM_FAILURES_PER_MINUTE"
    )
    signing_keys_dir: Path | None = Field(None, validation_alias="AUTH_SIGNING_KEYS_DIR")
    app_env: str = Field("development", validation_alias="APP_ENV")
    admin_token: SecretStr | None = Field(None, validation_alias="ADMIN_TOKEN")

    idp_a_jwks_url: str | None = Field(None, validation_alias="IDP_A_JWKS_URL")
    idp_a_issuer: str | None = Field(None, validation_alias="IDP_A_ISSUER")
    idp_a_audience: str | None = Field(None, validation_alias="IDP_A_AUDIENCE")
    idp_b_jwks_url: str | None = Field(None, validation_alias="IDP_B_JWKS_URL")
    idp_b_issuer: str | None = Field(None, validation_alias="IDP_B_ISSUER")
    idp_b_audience: str | None = Field(None, validation_alias="IDP_B_AUDIENCE")

    @field_validator(
        "idp_a_jwks_url",
        "idp_a_issuer",
        "idp_a_audience",
        "idp_b_jwks_url",
        "idp_b_issuer",
        "idp_b_audience",
        "signing_keys_dir",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        # `FOO=` in a .env file or a Helm value rendered empty means "not configured", not "the empty string".
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("admin_token", mode="before")
    @classmethod
    def _empty_token_is_unset(cls, value: object) -> object:
        # An empty ADMIN_TOKEN must disable the admin API, never make "" the password.
        return None if isinstance(value, str) and not value.strip() else value

    def production_problems(self) -> list[str]:
        """Why this configuration must not serve production traffic (checked at start, not by migrations)."""
        # Keys generated into the database are for the local stack; production mounts them as a Secret.
        if self.app_env == "production" and self.signing_keys_dir is None:
            return ["AUTH_SIGNING_KEYS_DIR must be set when APP_ENV=production"]
        return []

    @model_validator(mode="after")
    def _providers_all_or_nothing(self) -> Settings:
        for prefix in ("idp_a", "idp_b"):
            values = [getattr(self, f"{prefix}_{part}") for part in ("jwks_url", "issuer", "audience")]
            if any(values) and not all(values):
                name = prefix.upper()
                raise ValueError(f"{name}_JWKS_URL, {name}_ISSUER and {name}_AUDIENCE must be set together")
        return self

    def identity_provider(self, name: str) -> IdentityProviderConfig | None:
        """The configuration of provider ``idp-a``/``idp-b``, or None when it is disabled."""
        prefix = name.replace("-", "_")
        jwks_url = getattr(self, f"{prefix}_jwks_url")
        issuer = getattr(self, f"{prefix}_issuer")
        audience = getattr(self, f"{prefix}_audience")
        if not (jwks_url and issuer and audience):
            return None
        # Some providers sign with more than one spelling of their issuer (with and without https://).
        issuers = tuple(part.strip() for part in issuer.split(",") if part.strip())
        return IdentityProviderConfig(name=name, jwks_url=jwks_url, issuers=issuers, audience=audience)
