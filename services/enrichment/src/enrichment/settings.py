"""Enrichment configuration (environment only; names as in docs/configuration.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator
from pydantic_settings import NoDecode

from common.settings import CommonSettings, default_database_url
from enrichment.domain.links import LinkPolicy
from enrichment.previews.model import PreviewLimits, PreviewPolicy


def _comma_separated(value: Any) -> Any:
    # "60,300" is the documented form; pydantic-settings would otherwise expect JSON for a tuple.
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


BrowserMode = Literal["auto", "off", "required"]


class Settings(CommonSettings):
    database_url: str = Field(default_database_url("enrichment"), validation_alias="DATABASE_URL_ENRICHMENT")
    host: str = Field("127.0.0.1", validation_alias="ENRICHMENT_HOST")
    port: int = Field(8083, validation_alias="ENRICHMENT_PORT")
    metrics_port: int = Field(9083, validation_alias="ENRICHMENT_METRICS_PORT")
    worker_host: str = Field("127.0.0.1", validation_alias="ENRICHMENT_WORKER_HOST")
    worker_port: int = Field(8084, validation_alias="ENRICHMENT_WORKER_PORT")
    worker_metrics_port: int = Field(9084, validation_alias="ENRICHMENT_WORKER_METRICS_PORT")

    allow_private_networks: bool = Field(False, validation_alias="ENRICHMENT_ALLOW_PRIVATE_NETWORKS")
    retry_delays_seconds: Annotated[tuple[float, ...], NoDecode, BeforeValidator(_comma_separated)] = Field(
        (60.0, 300.0), validation_alias="ENRICHMENT_RETRY_DELAYS_SECONDS"
    )
    fetch_timeout_seconds: float = Field(10.0, gt=0, validation_alias="ENRICHMENT_FETCH_TIMEOUT_SECONDS")
    # Decoded bytes of a fetched page (after gzip/deflate); compressed bytes are capped at the same figure.
    max_page_bytes: int = Field(
        5 * 1024 * 1024, ge=64 * 1024, le=64 * 1024 * 1024, validation_alias="ENRICHMENT_MAX_PAGE_BYTES"
    )
    cache_ttl_seconds: int = Field(2_592_000, ge=0, validation_alias="ENRICHMENT_CACHE_TTL_SECONDS")
    openai_api_key: str | None = Field(None, validation_alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    llm_model: str | None = Field(None, validation_alias="ENRICHMENT_LLM_MODEL")
    browser: BrowserMode = Field("auto", validation_alias="ENRICHMENT_BROWSER")

    worker_concurrency: int = Field(4, ge=1, le=256, validation_alias="ENRICHMENT_WORKER_CONCURRENCY")
    job_lease_seconds: float = Field(60.0, gt=0, validation_alias="ENRICHMENT_JOB_LEASE_SECONDS")
    # A job whose workers died this many times (lease expiries) ends failed with `worker-crashed`.
    max_worker_crashes: int = Field(5, ge=1, validation_alias="ENRICHMENT_MAX_WORKER_CRASHES")
    worker_poll_seconds: float = Field(5.0, gt=0, validation_alias="ENRICHMENT_WORKER_POLL_SECONDS")
    job_retention_seconds: int = Field(7 * 86_400, ge=0, validation_alias="ENRICHMENT_JOB_RETENTION_SECONDS")
    entitlements_timeout_seconds: float = Field(1.0, gt=0, validation_alias="ENRICHMENT_ENTITLEMENTS_TIMEOUT_SECONDS")
    # Anti-entropy of the bookmark-URL projection (enrichment.anti_entropy): a pass every interval, 0 = off.
    bookmarks_url: str = Field("http://127.0.0.1:8082", validation_alias="BOOKMARKS_URL")
    anti_entropy_interval_seconds: float = Field(3600.0, ge=0, validation_alias="ANTI_ENTROPY_INTERVAL_SECONDS")
    anti_entropy_users_per_page: int = Field(200, ge=1, le=1000, validation_alias="ANTI_ENTROPY_USERS_PER_PAGE")
    anti_entropy_settle_seconds: float = Field(300.0, ge=0, validation_alias="ANTI_ENTROPY_SETTLE_SECONDS")
    anti_entropy_timeout_seconds: float = Field(10.0, gt=0, validation_alias="ANTI_ENTROPY_TIMEOUT_SECONDS")
    # Link previews (enrichment.previews): no AI, no quota; their own limits.
    preview_per_minute: int = Field(60, ge=1, validation_alias="PREVIEW_RATE_PER_MINUTE")
    preview_cache_ttl_seconds: int = Field(86_400, ge=0, validation_alias="PREVIEW_CACHE_TTL_SECONDS")
    preview_failure_ttl_seconds: int = Field(600, ge=0, validation_alias="PREVIEW_FAILURE_TTL_SECONDS")
    preview_timeout_seconds: float = Field(5.0, gt=0, le=60, validation_alias="PREVIEW_TIMEOUT_SECONDS")
    preview_max_head_bytes: int = Field(
        512 * 1024, ge=16 * 1024, le=4 * 1024 * 1024, validation_alias="PREVIEW_MAX_HEAD_BYTES"
    )
    preview_max_image_bytes: int = Field(
        5 * 1024 * 1024, ge=64 * 1024, le=32 * 1024 * 1024, validation_alias="PREVIEW_MAX_IMAGE_BYTES"
    )
    preview_max_image_pixels: int = Field(
        16_777_216, ge=65_536, le=100_000_000, validation_alias="PREVIEW_MAX_IMAGE_PIXELS"
    )
    # Link health (enrichment.worker.links, docs/api-guide.md section 15), run by the worker.
    link_check_enabled: bool = Field(True, validation_alias="LINK_CHECK_ENABLED")
    link_check_interval_days: float = Field(30.0, gt=0, validation_alias="LINK_CHECK_INTERVAL_DAYS")
    link_check_retry_hours: float = Field(24.0, gt=0, validation_alias="LINK_CHECK_RETRY_HOURS")
    link_check_rate_per_second: float = Field(2.0, gt=0, le=100, validation_alias="LINK_CHECK_RATE_PER_SECOND")
    user_agent: str = Field("Mozilla/5.0 (compatible; BookmarkEnricher/1.0)", validation_alias="ENRICHMENT_USER_AGENT")

    @field_validator("retry_delays_seconds")
    @classmethod
    def _non_negative(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if any(delay < 0 for delay in value):
            raise ValueError("retry delays must not be negative")
        return value

    @field_validator("openai_api_key", "openai_base_url", "llm_model", "otel_exporter_otlp_endpoint")
    @classmethod
    def _empty_is_unset(cls, value: str | None) -> str | None:
        # An exported-but-empty variable (common in compose files and charts) means "not configured".
        return value or None

    @property
    def preview_policy(self) -> PreviewPolicy:
        return PreviewPolicy(
            per_minute=self.preview_per_minute,
            ttl=timedelta(seconds=self.preview_cache_ttl_seconds),
            failure_ttl=timedelta(seconds=self.preview_failure_ttl_seconds),
        )

    @property
    def preview_limits(self) -> PreviewLimits:
        return PreviewLimits(
            head_bytes=self.preview_max_head_bytes,
            timeout_seconds=self.preview_timeout_seconds,
            image_bytes=self.preview_max_image_bytes,
            image_pixels=self.preview_max_image_pixels,
        )

    @property
    def link_policy(self) -> LinkPolicy:
        return LinkPolicy(
            interval=timedelta(days=self.link_check_interval_days), retry=timedelta(hours=self.link_check_retry_hours)
        )

    @property
    def max_attempts(self) -> int:
        """One first attempt plus one retry per configured delay (the third failure is final)."""
        return len(self.retry_delays_seconds) + 1
