"""Bookmarks service configuration (environment only)."""

from __future__ import annotations

from pydantic import Field, model_validator

from common.settings import CommonSettings, default_database_url

# Used only when BOOKMARKS_CURSOR_SECRET is unset outside production, so local cursors survive restarts.
_DEV_CURSOR_SECRET = "dev-only-cursor-secret-change-me"  # noqa: S105 - refused in production below


class Settings(CommonSettings):
    database_url: str = Field(default_database_url("bookmarks"), validation_alias="DATABASE_URL_BOOKMARKS")
    host: str = Field("127.0.0.1", validation_alias="BOOKMARKS_HOST")
    port: int = Field(8082, validation_alias="BOOKMARKS_PORT")
    cursor_secret: str = Field(_DEV_CURSOR_SECRET, validation_alias="BOOKMARKS_CURSOR_SECRET")
    app_env: str = Field("development", validation_alias="APP_ENV")

    @model_validator(mode="after")
    def _secret_required_in_production(self) -> Settings:
        if self.app_env == "production" and self.cursor_secret == _DEV_CURSOR_SECRET:
            raise ValueError("BOOKMARKS_CURSOR_SECRET must be set in production")
        return self
