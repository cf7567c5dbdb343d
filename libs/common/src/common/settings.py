"""Settings base: configuration comes only from the environment (docs/configuration.md)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DB_CONCURRENCY = 10
# How long a unit of work waits for the database before it is an outage (docs/operations/database-hangs.md).
# A request waits at most the acquire deadline, then one connect or statement deadline: 2.75 s in all,
# well inside the gateway's upstream deadline, so a hanging database answers 503, never 504.
DEFAULT_DB_CONNECT_TIMEOUT = 2.0
DEFAULT_DB_ACQUIRE_TIMEOUT = 0.75
DEFAULT_DB_STATEMENT_TIMEOUT = 2.0
DEFAULT_DB_READY_GRACE = 3.0

DEFAULT_KAFKA_BOOTSTRAP = "127.0.0.1:19092"


def default_database_url(db: str) -> str:
    """The embedded PostgreSQL that `make run` starts (devstack's default port)."""
    return f"postgresql+asyncpg://postgres@127.0.0.1:5442/{db}"


class CommonSettings(BaseSettings):
    """Variables every process reads. Subclasses add their own, named exactly as documented."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False, populate_by_name=True)

    kafka_bootstrap_servers: str = Field(DEFAULT_KAFKA_BOOTSTRAP, validation_alias="KAFKA_BOOTSTRAP_SERVERS")
    # The partition count every topic was created with (the topic Job's); a process stays not ready while
    # one of its topics has another (common.topics). Unset: any count.
    kafka_topic_partitions: int | None = Field(None, gt=0, validation_alias="KAFKA_TOPIC_PARTITIONS")
    otel_exporter_otlp_endpoint: str | None = Field(None, validation_alias="OTEL_EXPORTER_OTLP_ENDPOINT")
    # The share of traces recorded when spans are exported (common.tracing); a joined trace keeps its own.
    traces_sample_ratio: float = Field(1.0, ge=0, le=1, validation_alias="TRACES_SAMPLE_RATIO")
    log_level: str = Field("INFO", validation_alias="LOG_LEVEL")
    auth_url: str = Field("http://127.0.0.1:8081", validation_alias="AUTH_URL")
    jwt_issuer: str = Field("bookmarks-auth", validation_alias="JWT_ISSUER")
    jwt_audience: str = Field("bookmarks-api", validation_alias="JWT_AUDIENCE")
    # Connections kept open per process. Size it to the requests a replica has in its database at once: a
    # connection beyond it is closed when it is returned to a full pool and opened again at the next burst,
    # a new PostgreSQL backend each time (at 16 concurrent writes, 10 cost 0.7 ms of PostgreSQL CPU per
    # write). The pool may still grow by 10 (overflow) under a larger burst.
    db_pool_size: int = Field(20, gt=0, validation_alias="DB_POOL_SIZE")
    # Units of work (sessions) a process has in PostgreSQL at once; the rest wait their turn, first come
    # first served (common.db.create_session_factory). At 64 concurrent writes on two cores this took the
    # slowest 1 % from 375 ms to under 200, at the same throughput.
    db_concurrency: int = Field(DEFAULT_DB_CONCURRENCY, gt=0, validation_alias="DB_CONCURRENCY")
    # Client-side deadlines of every database round trip (common.db.Deadlines): opening a connection, waiting
    # for a turn at the gate and a pooled connection, and each statement. PostgreSQL's own statement_timeout
    # cannot end a statement of a server that has stopped answering; these end it in the client.
    db_connect_timeout_seconds: float = Field(
        DEFAULT_DB_CONNECT_TIMEOUT, gt=0, validation_alias="DB_CONNECT_TIMEOUT_SECONDS"
    )
    db_acquire_timeout_seconds: float = Field(
        DEFAULT_DB_ACQUIRE_TIMEOUT, gt=0, validation_alias="DB_ACQUIRE_TIMEOUT_SECONDS"
    )
    db_statement_timeout_seconds: float = Field(
        DEFAULT_DB_STATEMENT_TIMEOUT, gt=0, validation_alias="DB_STATEMENT_TIMEOUT_SECONDS"
    )
    # /readyz answers 503 once the database has failed its check for this long (one slow answer does not
    # take a replica out of rotation); it answers 200 again at the first check that passes.
    db_ready_grace_seconds: float = Field(DEFAULT_DB_READY_GRACE, ge=0, validation_alias="DB_READY_GRACE_SECONDS")
    max_body_bytes: int = Field(1024 * 1024, gt=0, validation_alias="MAX_BODY_BYTES")
    # Per-route exceptions to MAX_BODY_BYTES, keyed "METHOD /exact/path" (JSON object in the environment).
    max_body_bytes_by_route: dict[str, int] = Field(
        # A capture's html may be 10 MiB of UTF-8; its JSON escaping (quotes, newlines) needs room on top.
        default_factory=lambda: {"POST /v1/imports": 50 * 1024 * 1024, "POST /v1/enrichment/capture": 16 * 1024 * 1024},
        validation_alias="MAX_BODY_BYTES_BY_ROUTE",
    )
    # Bounds of a request head, enforced by the HTTP server layer of every service (common.server).
    max_header_count: int = Field(100, gt=0, validation_alias="HTTP_MAX_HEADER_COUNT")
    max_header_bytes: int = Field(16 * 1024, gt=0, validation_alias="HTTP_MAX_HEADER_BYTES")
    max_url_bytes: int = Field(8 * 1024, gt=0, validation_alias="HTTP_MAX_URL_BYTES")

    @property
    def jwks_url(self) -> str:
        return self.auth_url.rstrip("/") + "/v1/auth/jwks"
