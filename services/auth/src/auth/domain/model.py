"""Users, identities and sessions as the API and the events show them; no I/O."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from common.errors import InvalidIdentityToken
from common.events import UserUpdated
from common.validation import is_storable

PROVIDER_A = "idp-a"
PROVIDER_B = "idp-b"

# Claims are copied into profile fields the clients render; oversized values are cut or dropped so a
# provider (or a forged-but-valid test token) cannot make a user row arbitrarily large.
_MAX_SUBJECT = 255
_MAX_NAME = 256
_MAX_EMAIL = 320
_MAX_URL = 2048


@dataclass(frozen=True, slots=True)
class User:
    id: uuid.UUID
    is_anonymous: bool
    display_name: str | None
    email: str | None
    photo_url: str | None
    is_pro: bool
    use_ai: bool

    @classmethod
    def from_row(cls, row: Any) -> User:
        return cls(
            id=row["id"],
            is_anonymous=bool(row["is_anonymous"]),
            display_name=row["display_name"],
            email=row["email"],
            photo_url=row["photo_url"],
            is_pro=bool(row["is_pro"]),
            use_ai=bool(row["use_ai"]),
        )

    def to_api(self) -> dict[str, Any]:
        """The spec's User resource (``useAi`` is a setting, not part of it)."""
        return {
            "id": str(self.id),
            "isAnonymous": self.is_anonymous,
            "displayName": self.display_name,
            "email": self.email,
            "photoUrl": self.photo_url,
            "isPro": self.is_pro,
        }

    def updated_event(self) -> UserUpdated:
        return UserUpdated(userId=self.id, isAnonymous=self.is_anonymous, isPro=self.is_pro, useAi=self.use_ai)


@dataclass(frozen=True, slots=True)
class IssuedSession:
    access_token: str
    refresh_token: str
    user: User


@dataclass(frozen=True, slots=True)
class IssuedPairingCode:
    code: str  # as shown, XXXX-XXXX
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Entitlements:
    exists: bool
    use_ai: bool
    is_pro: bool


@dataclass(frozen=True, slots=True)
class Identity:
    """A verified provider identity and the profile its token carried."""

    provider: str
    subject: str
    display_name: str | None
    email: str | None
    photo_url: str | None


def _text(value: Any, limit: int) -> str | None:
    # A provider's odd profile (not a string, text PostgreSQL cannot store) is dropped, not fatal.
    if not isinstance(value, str) or not is_storable(value):
        return None
    value = value.strip()
    return value[:limit] or None


def _email(value: Any) -> str | None:
    text = _text(value, _MAX_EMAIL + 1)
    if text is None or len(text) > _MAX_EMAIL or "@" not in text:
        return None
    return text


def _photo_url(value: Any) -> str | None:
    text = _text(value, _MAX_URL + 1)
    if text is None or len(text) > _MAX_URL:
        return None
    # Clients put it in an <img src>: anything but a web URL (javascript:, data:) is dropped.
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return text


def identity_from_claims(provider: str, claims: dict[str, Any]) -> Identity:
    """The identity of verified ID-token ``claims``: keyed by ``sub``; profile from name/email/picture.

    The email is a profile field only: accounts are never matched by email, so an unverified or
    relay address (idp-b's privaterelay) cannot take over someone else's account.
    """
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > _MAX_SUBJECT or not is_storable(subject):
        raise InvalidIdentityToken("The identity token has no usable subject.")
    return Identity(
        provider=provider,
        subject=subject,
        display_name=_text(claims.get("name"), _MAX_NAME),
        email=_email(claims.get("email")),
        photo_url=_photo_url(claims.get("picture")),
    )
