"""SSRF-safe fetching of bookmarked pages (docs/api-guide.md, section 6)."""

from enrichment.fetch.addresses import IPAddress, is_blocked_address, parse_host_literal
from enrichment.fetch.client import (
    ANALYSED_CONTENT_TYPES,
    AddressPolicy,
    FetchedPage,
    Resolver,
    SafeFetcher,
    check_url_allowed,
    decode_body,
    default_resolver,
)
from enrichment.fetch.errors import (
    BLOCKED_HOST,
    DNS_FAILURE,
    FETCH_TIMEOUT,
    INVALID_URL,
    RETRIABLE_CODES,
    TOO_LARGE,
    UNSUPPORTED_CONTENT,
    UPSTREAM_4XX,
    UPSTREAM_5XX,
    UPSTREAM_RATE_LIMITED,
    FetchError,
    FetchErrorCode,
)

__all__ = [
    "ANALYSED_CONTENT_TYPES",
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
    "AddressPolicy",
    "FetchError",
    "FetchErrorCode",
    "FetchedPage",
    "IPAddress",
    "Resolver",
    "SafeFetcher",
    "check_url_allowed",
    "decode_body",
    "default_resolver",
    "is_blocked_address",
    "parse_host_literal",
]
