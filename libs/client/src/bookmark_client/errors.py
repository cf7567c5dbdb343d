"""Exceptions raised by the client.

Callers handle three situations differently, so there are three types:

- :class:`ApiError`: the server answered with an error body ``{code, message}`` (docs/api-guide.md, section 1);
  ``code`` is the stable, machine-readable part.
- :class:`SessionExpired` (an :class:`ApiError` with status 401): no usable session any more; the user
  must sign in again. :class:`NotSignedIn` is the same situation before any sign-in.
- :class:`Offline`: the server could not be reached at all; local writes stay queued.

:class:`PendingChanges` guards the one local operation that would silently lose unsynced writes (logout).
"""

from __future__ import annotations

import email.utils
import time
from datetime import UTC, datetime

import httpx

__all__ = [
    "ApiError",
    "BookmarkClientError",
    "NotSignedIn",
    "Offline",
    "PendingChanges",
    "SessionExpired",
    "parse_retry_after",
]


class BookmarkClientError(Exception):
    """Base of every exception this package raises on purpose."""


class ApiError(BookmarkClientError):
    """A non-2xx answer from the server, carrying its ``{code, message}`` body."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        retry_after: float | None = None,
        request_id: str | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.request_id = request_id
        super().__init__(f"{status} {code}: {message}")

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        code, message = _error_body(response)
        return cls(
            response.status_code,
            code,
            message,
            retry_after=parse_retry_after(response.headers.get("retry-after")),
            request_id=response.headers.get("x-request-id"),
        )


class SessionExpired(ApiError):
    """The refresh token was rejected (expired, revoked, reused): sign in again."""

    def __init__(
        self, message: str = "The session has expired; sign in again.", code: str = "invalid-refresh-token"
    ) -> None:
        super().__init__(401, code, message)


class NotSignedIn(SessionExpired):
    """No session is stored in this profile."""

    def __init__(self, message: str = "Not signed in.") -> None:
        super().__init__(message, code="not-signed-in")


class Offline(BookmarkClientError):
    """The server could not be reached (connection refused, DNS failure, timeout...)."""

    def __init__(self, message: str = "The server cannot be reached.") -> None:
        super().__init__(message)
        self.message = message


class PendingChanges(BookmarkClientError):
    """Local writes have not reached the server yet; the requested operation would drop them."""

    def __init__(self, count: int) -> None:
        self.count = count
        super().__init__(f"{count} local change(s) have not been synced yet.")


def _error_body(response: httpx.Response) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        message = body.get("message")
        return body["code"], message if isinstance(message, str) else body["code"]
    # Not our server's error shape (a proxy's HTML page, say): still give the caller something stable.
    return f"http-{response.status_code}", response.reason_phrase or f"HTTP {response.status_code}"


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date); ``None`` if absent/garbled."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    reference = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return max(0.0, (when - reference).total_seconds())
