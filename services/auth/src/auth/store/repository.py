"""Writes to the auth database, and the locks that order them.

Lock order, everywhere: the user row first, then its refresh-token family, then the token. Deleting a
user takes ``FOR UPDATE`` on it; minting or rotating a token takes ``FOR KEY SHARE`` (which is what
the foreign key would take anyway, but later, after the family lock, and then the two could deadlock).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from sqlalchemy import RowMapping, text
from sqlalchemy.ext.asyncio import AsyncSession

from auth.domain.model import Identity
from common.outbox import forget_published_events

UserLock = Literal["FOR UPDATE", "FOR NO KEY UPDATE", "FOR KEY SHARE"]

# Arbitrary constant: one advisory-lock id for "who creates the first signing key".
SIGNING_KEYS_LOCK_ID = 7_311_500_101

_USER_COLUMNS = (
    "u.id, u.is_anonymous, u.display_name, u.email, u.photo_url, "
    "COALESCE(s.is_pro, false) AS is_pro, COALESCE(st.use_ai, false) AS use_ai"
)
_USER_FROM = (
    "FROM users u LEFT JOIN subscriptions s ON s.user_id = u.id LEFT JOIN user_settings st ON st.user_id = u.id"
)


# --- users ---------------------------------------------------------------------------------------


async def lock_user(session: AsyncSession, user_id: uuid.UUID, mode: UserLock) -> RowMapping | None:
    """The user (with plan and consent), locked in ``mode`` until commit; None when it does not exist."""
    # Lock modes are our own literals, never request data.
    statement = text(f"SELECT {_USER_COLUMNS} {_USER_FROM} WHERE u.id = :id {mode} OF u")  # noqa: S608
    return (await session.execute(statement, {"id": user_id})).mappings().first()


async def create_user(
    session: AsyncSession, *, user_id: uuid.UUID, is_anonymous: bool, identity: Identity | None = None
) -> None:
    await session.execute(
        text(
            "INSERT INTO users (id, is_anonymous, display_name, email, photo_url) "
            "VALUES (:id, :anon, :name, :email, :photo)"
        ),
        {
            "id": user_id,
            "anon": is_anonymous,
            "name": identity.display_name if identity else None,
            "email": identity.email if identity else None,
            "photo": identity.photo_url if identity else None,
        },
    )
    await session.execute(text("INSERT INTO user_settings (user_id) VALUES (:id)"), {"id": user_id})
    await session.execute(text("INSERT INTO subscriptions (user_id) VALUES (:id)"), {"id": user_id})


async def mark_linked(session: AsyncSession, user_id: uuid.UUID, identity: Identity) -> None:
    """The user now has an identity: not anonymous any more; empty profile fields come from the token."""
    await session.execute(
        text(
            """
            UPDATE users SET is_anonymous = false,
                             display_name = COALESCE(display_name, :name),
                             email = COALESCE(email, :email),
                             photo_url = COALESCE(photo_url, :photo),
                             updated_at = now()
            WHERE id = :id
            """
        ),
        {"id": user_id, "name": identity.display_name, "email": identity.email, "photo": identity.photo_url},
    )


async def set_use_ai(session: AsyncSession, user_id: uuid.UUID, use_ai: bool) -> bool:
    """Store the consent; True when it changed."""
    result = await session.execute(
        text(
            "UPDATE user_settings SET use_ai = :v, updated_at = now() "
            "WHERE user_id = :id AND use_ai IS DISTINCT FROM :v RETURNING user_id"
        ),
        {"id": user_id, "v": use_ai},
    )
    return result.first() is not None


async def set_pro(session: AsyncSession, user_id: uuid.UUID, is_pro: bool) -> bool:
    """Store the plan; True when it changed."""
    result = await session.execute(
        text(
            "UPDATE subscriptions SET is_pro = :v, updated_at = now() "
            "WHERE user_id = :id AND is_pro IS DISTINCT FROM :v RETURNING user_id"
        ),
        {"id": user_id, "v": is_pro},
    )
    return result.first() is not None


async def delete_user(session: AsyncSession, user_id: uuid.UUID) -> None:
    """Delete the user and every row it owns; its refresh tokens are gone, so they are dead.

    The caller holds the user ``FOR UPDATE``, so no token can be minted for it meanwhile.
    """
    # Children before parents (the foreign keys have no cascade); table names are constants.
    for table in (
        "pairing_codes",
        "refresh_tokens",
        "refresh_token_families",
        "identities",
        "user_settings",
        "subscriptions",
    ):
        await session.execute(text(f"DELETE FROM {table} WHERE user_id = :id"), {"id": user_id})  # noqa: S608
    await session.execute(text("DELETE FROM users WHERE id = :id"), {"id": user_id})
    await forget_published_events(session, key=str(user_id))


# --- identities ----------------------------------------------------------------------------------


async def lock_identity(session: AsyncSession, provider: str, subject: str) -> None:
    """Serialize every sign-in and link of one (provider, subject) until commit.

    Without it two first sign-ins of the same identity would both create a user and one would fail
    on the primary key.
    """
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": f"identity\x1f{provider}\x1f{subject}"}
    )


async def identity_owner(session: AsyncSession, provider: str, subject: str) -> uuid.UUID | None:
    """The user owning the identity, its row locked against deletion; None when unowned.

    A user deleted while we waited for the lock drops out of the result, so the identity is then free.
    """
    result = await session.execute(
        text(
            "SELECT u.id FROM identities i JOIN users u ON u.id = i.user_id "
            "WHERE i.provider = :p AND i.subject = :s FOR KEY SHARE OF u"
        ),
        {"p": provider, "s": subject},
    )
    row = result.first()
    return row.id if row is not None else None


async def attach_identity(session: AsyncSession, user_id: uuid.UUID, identity: Identity) -> None:
    await session.execute(
        text("INSERT INTO identities (provider, subject, user_id) VALUES (:p, :s, :u)"),
        {"p": identity.provider, "s": identity.subject, "u": user_id},
    )


# --- refresh tokens ------------------------------------------------------------------------------


async def create_family(session: AsyncSession, user_id: uuid.UUID) -> uuid.UUID:
    family_id = uuid.uuid4()
    await session.execute(
        text("INSERT INTO refresh_token_families (id, user_id) VALUES (:f, :u)"), {"f": family_id, "u": user_id}
    )
    return family_id


async def insert_refresh_token(
    session: AsyncSession, *, token_hash: bytes, family_id: uuid.UUID, user_id: uuid.UUID, ttl_seconds: int
) -> None:
    # The database clock decides expiry, the same clock that checks it.
    await session.execute(
        text(
            "INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at) "
            "VALUES (:h, :f, :u, now() + make_interval(secs => :ttl))"
        ),
        {"h": token_hash, "f": family_id, "u": user_id, "ttl": float(ttl_seconds)},
    )


async def find_refresh_token(session: AsyncSession, token_hash: bytes) -> RowMapping | None:
    result = await session.execute(
        text("SELECT family_id, user_id, used_at FROM refresh_tokens WHERE token_hash = :h"), {"h": token_hash}
    )
    return result.mappings().first()


async def lock_family(session: AsyncSession, family_id: uuid.UUID) -> RowMapping | None:
    """The family locked until commit: rotations of one family and its revocation take turns.

    Without it a revocation could miss the token that a concurrent rotation is about to commit.
    """
    result = await session.execute(
        text("SELECT id, revoked_at FROM refresh_token_families WHERE id = :f FOR NO KEY UPDATE"), {"f": family_id}
    )
    return result.mappings().first()


async def use_refresh_token(session: AsyncSession, token_hash: bytes) -> bool:
    """Mark the token used if, and only if, it is still usable; True for exactly one caller."""
    result = await session.execute(
        text(
            """
            UPDATE refresh_tokens t SET used_at = now()
            FROM refresh_token_families f
            WHERE t.token_hash = :h AND t.used_at IS NULL AND t.expires_at > now()
              AND f.id = t.family_id AND f.revoked_at IS NULL
            RETURNING t.family_id
            """
        ),
        {"h": token_hash},
    )
    return result.first() is not None


async def revoke_family(session: AsyncSession, family_id: uuid.UUID, reason: str) -> None:
    await session.execute(
        text(
            "UPDATE refresh_token_families SET revoked_at = now(), revoked_reason = :r "
            "WHERE id = :f AND revoked_at IS NULL"
        ),
        {"f": family_id, "r": reason},
    )


async def revoke_family_of_token(session: AsyncSession, token_hash: bytes, reason: str) -> None:
    await session.execute(
        text(
            "UPDATE refresh_token_families SET revoked_at = now(), revoked_reason = :r "
            "WHERE id = (SELECT family_id FROM refresh_tokens WHERE token_hash = :h) AND revoked_at IS NULL"
        ),
        {"h": token_hash, "r": reason},
    )


async def prune_refresh_tokens(session: AsyncSession, batch_size: int) -> int:
    """Delete up to ``batch_size`` expired tokens and the families left without tokens; return tokens deleted."""
    deleted = await session.execute(
        text(
            "DELETE FROM refresh_tokens WHERE token_hash IN "
            "(SELECT token_hash FROM refresh_tokens WHERE expires_at < now() LIMIT :n FOR UPDATE SKIP LOCKED)"
        ),
        {"n": batch_size},
    )
    await session.execute(
        text(
            "DELETE FROM refresh_token_families f WHERE f.id IN (SELECT f2.id FROM refresh_token_families f2 "
            "WHERE NOT EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.family_id = f2.id) "
            "LIMIT :n FOR UPDATE SKIP LOCKED)"
        ),
        {"n": batch_size},
    )
    return int(getattr(deleted, "rowcount", 0) or 0)


# --- pairing codes -------------------------------------------------------------------------------


async def live_pairing_codes(session: AsyncSession, user_id: uuid.UUID) -> tuple[int, float]:
    """How many live codes the user has, and the seconds until the first of them expires (0 when none)."""
    result = await session.execute(
        text(
            "SELECT count(*) AS n, COALESCE(EXTRACT(EPOCH FROM min(expires_at) - now()), 0) AS first_expiry "
            "FROM pairing_codes WHERE user_id = :u AND expires_at > now()"
        ),
        {"u": user_id},
    )
    row = result.one()
    return int(row.n), float(row.first_expiry)


async def insert_pairing_code(
    session: AsyncSession, *, code_hash: bytes, user_id: uuid.UUID, ttl_seconds: int
) -> datetime:
    """Store the code's hash; its expiry, by the database clock that checks it."""
    result = await session.execute(
        text(
            "INSERT INTO pairing_codes (code_hash, user_id, expires_at) "
            "VALUES (:h, :u, now() + make_interval(secs => :ttl)) RETURNING expires_at"
        ),
        {"h": code_hash, "u": user_id, "ttl": float(ttl_seconds)},
    )
    expires_at: datetime = result.scalar_one()
    return expires_at


async def take_pairing_code(session: AsyncSession, code_hash: bytes) -> uuid.UUID | None:
    """Use the code up if it is live: its user for exactly one caller, None for every other."""
    result = await session.execute(
        text("DELETE FROM pairing_codes WHERE code_hash = :h AND expires_at > now() RETURNING user_id"),
        {"h": code_hash},
    )
    row = result.first()
    return row.user_id if row is not None else None


async def prune_pairing_codes(session: AsyncSession, batch_size: int) -> int:
    """Delete up to ``batch_size`` expired codes; return how many."""
    deleted = await session.execute(
        text(
            "DELETE FROM pairing_codes WHERE code_hash IN "
            "(SELECT code_hash FROM pairing_codes WHERE expires_at < now() LIMIT :n FOR UPDATE SKIP LOCKED)"
        ),
        {"n": batch_size},
    )
    return int(getattr(deleted, "rowcount", 0) or 0)


# --- signing keys --------------------------------------------------------------------------------


async def lock_signing_keys(session: AsyncSession) -> None:
    """Serialize replicas starting at once, so they agree on one current key."""
    await session.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": SIGNING_KEYS_LOCK_ID})


async def insert_signing_key(session: AsyncSession, *, kid: str, private_pem: str) -> None:
    await session.execute(
        text("INSERT INTO signing_keys (kid, private_pem) VALUES (:kid, :pem)"), {"kid": kid, "pem": private_pem}
    )
