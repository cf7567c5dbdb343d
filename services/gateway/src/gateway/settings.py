"""Gateway configuration (environment only, docs/configuration.md plus the ``GATEWAY_*`` variables)."""

from __future__ import annotations

from pydantic import Field

from common.settings import CommonSettings

# Tokens are checked against a clock that may differ a little from the one that issued them or the one
# that stamped a deletion event; deny-list entries outlive the token lifetime by this margin.
CLOCK_SKEW_SECONDS = 60


class Settings(CommonSettings):
    host: str = Field("127.0.0.1", validation_alias="GATEWAY_HOST")
    port: int = Field(8080, validation_alias="GATEWAY_PORT")
    metrics_port: int = Field(9080, validation_alias="GATEWAY_METRICS_PORT")
    bookmarks_url: str = Field("http://127.0.0.1:8082", validation_alias="BOOKMARKS_URL")
    enrichment_url: str = Field("http://127.0.0.1:8083", validation_alias="ENRICHMENT_URL")
    access_token_ttl_seconds: int = Field(900, validation_alias="ACCESS_TOKEN_TTL_SECONDS")

    # Where access-token keys come from; defaults to auth's public JWKS (AUTH_URL + /v1/auth/jwks).
    jwks_url_override: str | None = Field(None, validation_alias="GATEWAY_JWKS_URL")

    upstream_timeout_seconds: float = Field(10.0, validation_alias="GATEWAY_UPSTREAM_TIMEOUT_SECONDS")
    upstream_max_connections: int = Field(1000, validation_alias="GATEWAY_UPSTREAM_MAX_CONNECTIONS")
    upstream_max_keepalive: int = Field(200, validation_alias="GATEWAY_UPSTREAM_MAX_KEEPALIVE")

    nudge_coalesce_ms: int = Field(25, validation_alias="GATEWAY_NUDGE_COALESCE_MS")
    ws_ping_seconds: float = Field(30.0, validation_alias="GATEWAY_WS_PING_SECONDS")
    ws_max_per_user: int = Field(10, validation_alias="GATEWAY_WS_MAX_PER_USER")

    # Token buckets are per replica: N replicas admit up to N times these rates in total.
    rate_limit_per_minute: int = Field(600, validation_alias="GATEWAY_RATE_LIMIT_PER_MINUTE")
    ip_rate_limit_per_minute: int = Field(120, validation_alias="GATEWAY_IP_RATE_LIMIT_PER_MINUTE")
    # Preview pictures (no token): a library page shows one per row, each fetched once (immutable).
    image_rate_limit_per_minute: int = Field(1200, validation_alias="GATEWAY_IMAGE_RATE_LIMIT_PER_MINUTE")
    # How many reverse proxies in front of the gateway append to X-Forwarded-For (0: none, use the
    # socket peer). Trusting more hops than really exist lets clients pick their own rate-limit key.
    trusted_proxy_hops: int = Field(0, validation_alias="GATEWAY_TRUSTED_PROXY_HOPS")

    cors_origins: str = Field("", validation_alias="GATEWAY_CORS_ORIGINS")
    openapi_refresh_seconds: float = Field(300.0, validation_alias="GATEWAY_OPENAPI_REFRESH_SECONDS")
    # The web app's build (web/dist, made by `make web`): its shell at / and its files under /app/.
    # Empty: no web app is served (those paths answer 404).
    web_dir: str = Field("", validation_alias="GATEWAY_WEB_DIR")

    @property
    def gateway_jwks_url(self) -> str:
        return self.jwks_url_override or self.jwks_url

    @property
    def cors_origin_list(self) -> list[str]:
        return [origin.strip() for origin in self.cors_origins.split(",") if origin.strip()]

    @property
    def upstream_urls(self) -> dict[str, str]:
        return {
            "auth": self.auth_url.rstrip("/"),
            "bookmarks": self.bookmarks_url.rstrip("/"),
            "enrichment": self.enrichment_url.rstrip("/"),
        }

    @property
    def deny_retention_seconds(self) -> int:
        """How long a deleted user stays denied: until every token issued before the deletion expired."""
        return self.access_token_ttl_seconds + CLOCK_SKEW_SECONDS
