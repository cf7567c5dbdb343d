"""Bookmarks service configuration (environment only)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from common.settings import CommonSettings, default_database_url

# Used only when BOOKMARKS_CURSOR_SECRET is unset outside production, so local cursors survive restarts.
_DEV_CURSOR_SECRET = "dev-only-cursor-secret-change-me"  # noqa: S105 - refused in production (production_problems)


class Settings(CommonSettings):
    database_url: str = Field(default_database_url("bookmarks"), validation_alias="DATABASE_URL_BOOKMARKS")
    host: str = Field("127.0.0.1", validation_alias="BOOKMARKS_HOST")
    port: int = Field(8082, validation_alias="BOOKMARKS_PORT")
    metrics_port: int = Field(9082, validation_alias="BOOKMARKS_METRICS_PORT")
    cursor_secret: str = Field(_DEV_CURSOR_SECRET, validation_alias="BOOKMARKS_CURSOR_SECRET")
    app_env: str = Field("development", validation_alias="APP_ENV")
    import_batch_size: int = Field(2500, ge=1, le=5000, validation_alias="IMPORT_BATCH_SIZE")
    import_lease_seconds: float = Field(60.0, gt=0, validation_alias="IMPORT_LEASE_SECONDS")
    import_poll_seconds: float = Field(5.0, gt=0, validation_alias="IMPORT_POLL_SECONDS")
    trash_retention_days: float = Field(30.0, gt=0, le=3650, validation_alias="TRASH_RETENTION_DAYS")
    trash_purge_interval_seconds: float = Field(3600.0, ge=0, validation_alias="TRASH_PURGE_INTERVAL_SECONDS")

    @property
    def trash_retention(self) -> timedelta:
        return timedelta(days=self.trash_retention_days)

    def production_problems(self) -> list[str]:
        """Why this configuration must not serve production traffic (checked at start, not by migrations)."""
        if self.app_env == "production" and self.cursor_secret == _DEV_CURSOR_SECRET:
            return ["BOOKMARKS_CURSOR_SECRET must be set when APP_ENV=production"]
        return []
