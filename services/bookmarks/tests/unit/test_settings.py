"""Production refuses development secrets; migrations (which only build Settings) are unaffected."""

from __future__ import annotations

import pytest

from bookmarks.main import create_app
from bookmarks.settings import Settings


def test_production_without_a_cursor_secret_refuses_to_start() -> None:
    settings = Settings(app_env="production")
    assert settings.production_problems() == ["BOOKMARKS_CURSOR_SECRET must be set when APP_ENV=production"]
    with pytest.raises(RuntimeError, match="BOOKMARKS_CURSOR_SECRET"):
        create_app(settings)


def test_production_with_a_secret_and_development_defaults_are_fine() -> None:
    assert Settings(app_env="production", cursor_secret="s3cret-from-a-k8s-secret").production_problems() == []
    assert Settings().production_problems() == []
