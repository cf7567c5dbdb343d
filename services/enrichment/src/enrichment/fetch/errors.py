"""Fetch failures, each carrying one of the attempt error codes of docs/api-guide.md, section 6.

FetchError(code)
  retriable:      fetch-timeout, dns-failure, upstream-5xx, upstream-rate-limited
  not retriable:  upstream-4xx, blocked-host, invalid-url, unsupported-content, too-large
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "BLOCKED_HOST",
    "DNS_FAILURE",
    "FETCH_TIMEOUT",
    "INVALID_URL",
    "RETRIABLE_CODES",
    "TOO_LARGE",
    "UNSUPPORTED_CONTENT",
    "UPSTREAM_4XX",
    "UPSTREAM_5XX",
    "UPSTREAM_RATE_LIMITED",
    "FetchError",
    "FetchErrorCode",
]

FetchErrorCode = Literal[
    "fetch-timeout",
    "dns-failure",
    "upstream-5xx",
    "upstream-rate-limited",
    "upstream-4xx",
    "blocked-host",
    "invalid-url",
    "unsupported-content",
    "too-large",
]

FETCH_TIMEOUT: Final = "fetch-timeout"
DNS_FAILURE: Final = "dns-failure"
UPSTREAM_5XX: Final = "upstream-5xx"
UPSTREAM_RATE_LIMITED: Final = "upstream-rate-limited"
UPSTREAM_4XX: Final = "upstream-4xx"
BLOCKED_HOST: Final = "blocked-host"
INVALID_URL: Final = "invalid-url"
UNSUPPORTED_CONTENT: Final = "unsupported-content"
TOO_LARGE: Final = "too-large"

RETRIABLE_CODES: Final[frozenset[FetchErrorCode]] = frozenset(
    {FETCH_TIMEOUT, DNS_FAILURE, UPSTREAM_5XX, UPSTREAM_RATE_LIMITED}
)


class FetchError(Exception):
    """A fetch attempt failed; ``code`` is what the job records as its error code."""

    def __init__(self, code: FetchErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: FetchErrorCode = code
        self.message = message

    @property
    def retriable(self) -> bool:
        return self.code in RETRIABLE_CODES

    def __repr__(self) -> str:
        return f"FetchError(code={self.code!r}, message={self.message!r})"
