"""Tables of the auth database.

Every row of a user references ``users.id`` without ``ON DELETE CASCADE``: deleting a user deletes its
rows explicitly (:func:`auth.store.repository.delete_user`), and the foreign keys make a row that
escaped that (a token minted concurrently) an error instead of an orphan.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Column, DateTime, ForeignKey, Index, LargeBinary, Text, text
from sqlalchemy.dialects.postgresql import UUID
from sqlmodel import Field, SQLModel


def _ts(nullable: bool = True) -> Any:
    return Column(DateTime(timezone=True), nullable=nullable)


def _created_at() -> Any:
    return Column(DateTime(timezone=True), nullable=False, server_default=text("now()"))


def _user_fk(*, primary_key: bool = False) -> Any:
    return Column(UUID(as_uuid=True), ForeignKey("users.id"), primary_key=primary_key, nullable=False)


class UserRow(SQLModel, table=True):
    __tablename__ = "users"

    id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    is_anonymous: bool = Field(sa_column=Column(Boolean, nullable=False))
    display_name: str | None = Field(default=None, sa_column=Column(Text))
    email: str | None = Field(default=None, sa_column=Column(Text))
    photo_url: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime = Field(sa_column=_created_at())
    updated_at: datetime = Field(sa_column=_created_at())


class IdentityRow(SQLModel, table=True):
    """A provider identity; (provider, subject) belongs to exactly one user."""

    __tablename__ = "identities"
    __table_args__ = (Index("ix_identities_user", "user_id"),)

    provider: str = Field(sa_column=Column(Text, primary_key=True))
    subject: str = Field(sa_column=Column(Text, primary_key=True))
    user_id: uuid.UUID = Field(sa_column=_user_fk())
    created_at: datetime = Field(sa_column=_created_at())


class UserSettingsRow(SQLModel, table=True):
    __tablename__ = "user_settings"

    user_id: uuid.UUID = Field(sa_column=_user_fk(primary_key=True))
    # Consent is opt-in (docs/api-guide.md §9).
    use_ai: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))
    updated_at: datetime = Field(sa_column=_created_at())


class SubscriptionRow(SQLModel, table=True):
    __tablename__ = "subscriptions"

    user_id: uuid.UUID = Field(sa_column=_user_fk(primary_key=True))
    is_pro: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))
    updated_at: datetime = Field(sa_column=_created_at())


class RefreshTokenFamilyRow(SQLModel, table=True):
    """All refresh tokens descended from one sign-in. Revoking the family kills every one of them."""

    __tablename__ = "refresh_token_families"
    __table_args__ = (Index("ix_refresh_token_families_user", "user_id"),)

    id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    user_id: uuid.UUID = Field(sa_column=_user_fk())
    created_at: datetime = Field(sa_column=_created_at())
    revoked_at: datetime | None = Field(default=None, sa_column=_ts())
    revoked_reason: str | None = Field(default=None, sa_column=Column(Text))


class RefreshTokenRow(SQLModel, table=True):
    """One refresh token, by the SHA-256 of its value (the value itself is never stored).

    A used token stays until it expires so that presenting it again is recognised as reuse.
    """

    __tablename__ = "refresh_tokens"
    __table_args__ = (
        Index("ix_refresh_tokens_family", "family_id"),
        Index("ix_refresh_tokens_user", "user_id"),
        Index("ix_refresh_tokens_expires", "expires_at"),
    )

    token_hash: bytes = Field(sa_column=Column(LargeBinary, primary_key=True))
    family_id: uuid.UUID = Field(
        sa_column=Column(UUID(as_uuid=True), ForeignKey("refresh_token_families.id"), nullable=False)
    )
    user_id: uuid.UUID = Field(sa_column=_user_fk())
    created_at: datetime = Field(sa_column=_created_at())
    expires_at: datetime = Field(sa_column=_ts(nullable=False))
    used_at: datetime | None = Field(default=None, sa_column=_ts())


class SigningKeyRow(SQLModel, table=True):
    """Access-token signing keys of the local stack (production reads them from AUTH_SIGNING_KEYS_DIR)."""

    __tablename__ = "signing_keys"

    kid: str = Field(sa_column=Column(Text, primary_key=True))
    private_pem: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(sa_column=_created_at())
    retired_at: datetime | None = Field(default=None, sa_column=_ts())


class PairingCodeRow(SQLModel, table=True):
    """A live pairing code, by the SHA-256 of its canonical form; deleted when claimed, pruned when expired."""

    __tablename__ = "pairing_codes"
    __table_args__ = (
        Index("ix_pairing_codes_user", "user_id"),
        Index("ix_pairing_codes_expires", "expires_at"),
    )

    code_hash: bytes = Field(sa_column=Column(LargeBinary, primary_key=True))
    user_id: uuid.UUID = Field(sa_column=_user_fk())
    created_at: datetime = Field(sa_column=_created_at())
    expires_at: datetime = Field(sa_column=_ts(nullable=False))


# The tables revision 0001 creates; later tables are created by their own revisions, with their own DDL.
TABLES = (
    UserRow,
    IdentityRow,
    UserSettingsRow,
    SubscriptionRow,
    RefreshTokenFamilyRow,
    RefreshTokenRow,
    SigningKeyRow,
)
