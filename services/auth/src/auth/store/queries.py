"""Reads of the auth database."""

from __future__ import annotations

import uuid

from sqlalchemy import RowMapping, text
from sqlalchemy.ext.asyncio import AsyncSession

_USER = text(
    "SELECT u.id, u.is_anonymous, u.display_name, u.email, u.photo_url, "
    "COALESCE(s.is_pro, false) AS is_pro, COALESCE(st.use_ai, false) AS use_ai "
    "FROM users u LEFT JOIN subscriptions s ON s.user_id = u.id LEFT JOIN user_settings st ON st.user_id = u.id "
    "WHERE u.id = :id"
)


async def user(session: AsyncSession, user_id: uuid.UUID) -> RowMapping | None:
    """The user with its plan and consent, or None when it does not exist (deleted, merged away)."""
    return (await session.execute(_USER, {"id": user_id})).mappings().first()


async def signing_keys(session: AsyncSession) -> list[RowMapping]:
    """Stored signing keys, newest first."""
    result = await session.execute(
        text("SELECT kid, private_pem, created_at, retired_at FROM signing_keys ORDER BY created_at DESC, kid")
    )
    return list(result.mappings())
