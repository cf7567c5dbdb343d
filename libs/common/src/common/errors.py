"""The error model every service answers with (docs/api-guide.md, section 1).

Exception tree::

    AppError                      500 internal
    ├── InvalidRequest            400 invalid-request
    ├── InvalidUrl                400 invalid-url
    ├── InvalidCursor             400 invalid-cursor
    ├── Unauthorized              401 unauthorized          (+ WWW-Authenticate: Bearer)
    ├── InvalidRefreshToken       401 invalid-refresh-token
    ├── InvalidIdentityToken      401 invalid-identity-token
    ├── ConsentRequired           403 consent-required
    ├── NotFound                  404 not-found
    ├── MethodNotAllowed          405 method-not-allowed
    ├── IdentityAlreadyInUse      409 identity-already-in-use
    ├── PayloadTooLarge           413 payload-too-large
    ├── QuotaExceeded             429 quota-exceeded         (+ Retry-After)
    ├── RateLimited               429 rate-limited           (+ Retry-After)
    ├── Unavailable               503 unavailable            (+ Retry-After)
    └── UpstreamTimeout           504 upstream-timeout

Services raise these (or subclasses in their ``domain/errors.py``); :mod:`common.handlers` maps them to
``{"code", "message"}`` responses in one place.
"""

from __future__ import annotations

from typing import ClassVar


class AppError(Exception):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"
    default_message: ClassVar[str] = "Unexpected server error."

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None) -> None:
        self.message = message or self.default_message
        self.headers: dict[str, str] = dict(headers or {})
        super().__init__(self.message)

    def body(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class InvalidRequest(AppError):
    status = 400
    code = "invalid-request"
    default_message = "The request is invalid."


class InvalidUrl(AppError):
    status = 400
    code = "invalid-url"
    default_message = "The url must be an http or https URL with a host."


class InvalidCursor(AppError):
    status = 400
    code = "invalid-cursor"
    default_message = "The cursor was not issued by this server for this user."


class Unauthorized(AppError):
    status = 401
    code = "unauthorized"
    default_message = "A valid access token is required."

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": "Bearer", **(headers or {})})


class InvalidRefreshToken(AppError):
    status = 401
    code = "invalid-refresh-token"
    default_message = "The refresh token is unknown, expired, revoked or already used."


class InvalidIdentityToken(AppError):
    status = 401
    code = "invalid-identity-token"
    default_message = "The identity token could not be verified."


class ConsentRequired(AppError):
    status = 403
    code = "consent-required"
    default_message = "AI enrichment is off for this account; enable useAi in settings first."


class NotFound(AppError):
    status = 404
    code = "not-found"
    default_message = "Not found."


class MethodNotAllowed(AppError):
    status = 405
    code = "method-not-allowed"
    default_message = "This method is not allowed on this path."


class IdentityAlreadyInUse(AppError):
    status = 409
    code = "identity-already-in-use"
    default_message = "This identity already belongs to another account and cannot be merged."


class PayloadTooLarge(AppError):
    status = 413
    code = "payload-too-large"
    default_message = "The request body is too large."

    @classmethod
    def over(cls, limit_bytes: int) -> PayloadTooLarge:
        """The error naming the limit that was really applied (``MAX_BODY_BYTES``)."""
        return cls(f"The request body is larger than the limit of {describe_bytes(limit_bytes)}.")


class QuotaExceeded(AppError):
    status = 429
    code = "quota-exceeded"
    default_message = "Enrichment quota exceeded."

    def __init__(self, message: str | None = None, *, retry_after_seconds: int) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, retry_after_seconds))})


class RateLimited(AppError):
    status = 429
    code = "rate-limited"
    default_message = "Too many requests; slow down."

    def __init__(
        self, message: str | None = None, *, retry_after_seconds: int, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, retry_after_seconds)), **(headers or {})})


class Unavailable(AppError):
    status = 503
    code = "unavailable"
    default_message = "A dependency is unavailable; try again shortly."

    def __init__(self, message: str | None = None, *, retry_after_seconds: int = 5) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after_seconds)})


class UpstreamTimeout(AppError):
    status = 504
    code = "upstream-timeout"
    default_message = "An upstream service did not answer in time."


def describe_bytes(count: int) -> str:
    """``1048576`` → ``1 MiB``, ``2048`` → ``2 KiB``, otherwise the exact number of bytes."""
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def error_for_status(status: int, message: str | None = None) -> AppError:
    """The error class for a bare HTTP status (Starlette's own 404/405 and similar)."""
    for cls in (NotFound, MethodNotAllowed, PayloadTooLarge, InvalidRequest, Unauthorized, Unavailable):
        if cls.status == status:
            return cls(message)
    err = AppError(message)
    return err
