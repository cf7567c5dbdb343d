"""Metrics of the auth service."""

from __future__ import annotations

from prometheus_client import Counter

SESSIONS_ISSUED = Counter(
    "auth_sessions_issued_total",
    "Sessions (token pairs) issued, by how: anonymous, idp-a, idp-b, link, merge, refresh, pairing.",
    ["service", "method"],
)
REFRESH_TOKEN_REUSE = Counter(
    "auth_refresh_token_reuse_total",
    "Already-rotated refresh tokens presented again; each revoked its whole family. Alert on a rise.",
    ["service"],
)
PAIRING_CODES = Counter(
    "auth_pairing_codes_total",
    "Pairing codes by outcome: issued, claimed, refused (unknown, expired or used). A rise of refused is guessing.",
    ["service", "outcome"],
)

PAIRING_OUTCOMES: tuple[str, ...] = ("issued", "claimed", "refused")
SESSION_METHODS: tuple[str, ...] = ("anonymous", "idp-a", "idp-b", "link", "merge", "refresh")


def _initialise(service: str) -> None:
    """Every known label value at 0 from process start: a panel or alert sees 0, not an absent series."""
    for method in SESSION_METHODS:
        SESSIONS_ISSUED.labels(service, method)
    REFRESH_TOKEN_REUSE.labels(service)
    for outcome in PAIRING_OUTCOMES:
        PAIRING_CODES.labels(service, outcome)


_initialise("auth")
