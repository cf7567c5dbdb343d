"""Auth domain errors (mapped to responses by common.handlers)."""

from __future__ import annotations

from common.errors import InvalidRequest, NotFound, Unauthorized, Unavailable


class UserGone(Unauthorized):
    default_message = "This account was deleted or merged into another account."


class UserNotFound(NotFound):
    default_message = "No user with this id."


class ProviderNotConfigured(Unavailable):
    default_message = "Sign-in with this identity provider is not configured on this server."


class ProviderUnreachable(Unavailable):
    default_message = "The identity provider's signing keys cannot be fetched right now; try again shortly."


class AdminTokenInvalid(Unauthorized):
    default_message = "A valid X-Admin-Token header is required."


class InvalidPairingCode(InvalidRequest):
    code = "invalid-pairing-code"
    default_message = "This pairing code is unknown, expired or already used."
