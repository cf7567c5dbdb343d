"""Configuration from the environment (docs/configuration.md)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from auth.settings import Settings

_AUTH_VARS = (
    "ACCESS_TOKEN_TTL_SECONDS",
    "REFRESH_TOKEN_TTL_SECONDS",
    "ADMIN_TOKEN",
    "AUTH_HOST",
    "AUTH_PORT",
    "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE",
    "AUTH_SIGNING_KEYS_DIR",
    "DATABASE_URL_AUTH",
    *(f"IDP_{p}_{part}" for p in "AB" for part in ("JWKS_URL", "ISSUER", "AUDIENCE")),
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _AUTH_VARS:
        monkeypatch.delenv(name, raising=False)


def test_defaults() -> None:
    settings = Settings()

    assert (settings.host, settings.port) == ("127.0.0.1", 8081)
    assert settings.access_token_ttl_seconds == 900
    assert settings.refresh_token_ttl_seconds == 2_592_000
    assert settings.anonymous_rate_limit_per_minute == 20
    assert settings.admin_token is None
    assert settings.signing_keys_dir is None
    assert settings.identity_provider("idp-a") is None and settings.identity_provider("idp-b") is None
    assert settings.database_url.endswith("/auth")


def test_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTH_PORT", "9999")
    monkeypatch.setenv("ACCESS_TOKEN_TTL_SECONDS", "60")
    monkeypatch.setenv("ADMIN_TOKEN", "s3cret")
    monkeypatch.setenv("AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE", "5")
    monkeypatch.setenv("IDP_B_JWKS_URL", "https://idp-b.test/keys")
    monkeypatch.setenv("IDP_B_ISSUER", "https://idp-b.test")
    monkeypatch.setenv("IDP_B_AUDIENCE", "app")

    settings = Settings()

    assert settings.port == 9999 and settings.access_token_ttl_seconds == 60
    assert settings.admin_token is not None and settings.admin_token.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)
    assert settings.anonymous_rate_limit_per_minute == 5
    provider = settings.identity_provider("idp-b")
    assert provider is not None
    assert (provider.jwks_url, provider.issuers, provider.audience) == (
        "https://idp-b.test/keys",
        ("https://idp-b.test",),
        "app",
    )


def test_several_issuers_may_be_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDP_A_JWKS_URL", "https://a.test/keys")
    monkeypatch.setenv("IDP_A_ISSUER", "accounts.a.test, https://accounts.a.test")
    monkeypatch.setenv("IDP_A_AUDIENCE", "client")

    provider = Settings().identity_provider("idp-a")

    assert provider is not None
    assert provider.issuers == ("accounts.a.test", "https://accounts.a.test")


def test_a_half_configured_provider_fails_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDP_A_JWKS_URL", "https://a.test/keys")

    with pytest.raises(ValidationError, match="IDP_A_JWKS_URL, IDP_A_ISSUER and IDP_A_AUDIENCE"):
        Settings()


def test_empty_values_mean_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADMIN_TOKEN", "")
    monkeypatch.setenv("IDP_A_JWKS_URL", "")
    monkeypatch.setenv("AUTH_SIGNING_KEYS_DIR", " ")

    settings = Settings()

    assert settings.admin_token is None
    assert settings.identity_provider("idp-a") is None
    assert settings.signing_keys_dir is None


def test_nonsense_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCESS_TOKEN_TTL_SECONDS", "0")

    with pytest.raises(ValidationError):
        Settings()


def test_production_needs_signing_keys_from_a_secret(tmp_path: object) -> None:
    from pathlib import Path

    import pytest

    from auth.main import create_app
    from auth.settings import Settings

    settings = Settings(app_env="production")
    assert settings.production_problems() == ["AUTH_SIGNING_KEYS_DIR must be set when APP_ENV=production"]
    with pytest.raises(RuntimeError, match="AUTH_SIGNING_KEYS_DIR"):
        create_app(settings)
    assert Settings(app_env="production", signing_keys_dir=Path(str(tmp_path))).production_problems() == []
