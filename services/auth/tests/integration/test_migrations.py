"""The auth migrations: an empty database upgraded to head is what the models describe, and data a
previous release wrote survives the upgrade and reads correctly. Older schemas come from running the
real chain up to a revision, never from altering a newer one."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from auth.migrate import MIGRATIONS_DIR, schema
from auth.store import queries, repository
from common.migrations import head_and_previous
from devstack.migration_checks import engine_on, execute, schema_problems, scratch_database, upgrade_to

ANONYMOUS = uuid.UUID("00000000-0000-4000-8000-0000000000a1")
LINKED = uuid.UUID("00000000-0000-4000-8000-0000000000a2")
LIVE_FAMILY = uuid.UUID("00000000-0000-4000-8000-0000000000f1")
REVOKED_FAMILY = uuid.UUID("00000000-0000-4000-8000-0000000000f2")
TOKEN = hashlib.sha256(b"refresh-token").digest()


@pytest.fixture
async def database(infra: Any) -> AsyncIterator[str]:
    async with scratch_database(infra.postgres, "auth_migration") as url:
        yield url


async def test_an_empty_database_upgraded_to_head_is_what_the_models_describe(database: str) -> None:
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    assert await schema_problems(database, schema()) == []


# What a previous release stores: plain SQL its schema accepts.
PREVIOUS_RELEASE_ROWS = (
    "INSERT INTO users (id, is_anonymous, display_name, email, photo_url) VALUES "
    f"('{ANONYMOUS}', true, NULL, NULL, NULL), ('{LINKED}', false, 'Zoë', 'zoe@example.test', 'https://p.test/z')",
    f"INSERT INTO identities (provider, subject, user_id) VALUES ('idp-a', 'subject-1', '{LINKED}')",
    f"INSERT INTO user_settings (user_id, use_ai) VALUES ('{LINKED}', true)",
    f"INSERT INTO subscriptions (user_id, is_pro) VALUES ('{LINKED}', true)",
    "INSERT INTO refresh_token_families (id, user_id, revoked_at, revoked_reason) VALUES "
    f"('{LIVE_FAMILY}', '{LINKED}', NULL, NULL), ('{REVOKED_FAMILY}', '{ANONYMOUS}', now(), 'reuse')",
    "INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at) VALUES "
    f"('\\x{TOKEN.hex()}', '{LIVE_FAMILY}', '{LINKED}', now() + interval '30 days')",
    "INSERT INTO signing_keys (kid, private_pem) VALUES ('k1', '-----BEGIN PRIVATE KEY-----')",
)


async def test_data_of_the_previous_release_survives_the_upgrade_to_head(database: str) -> None:
    # A chain of one revision has no previous release yet: the rows are then written at head.
    head, previous = head_and_previous(MIGRATIONS_DIR)
    await upgrade_to(MIGRATIONS_DIR, database, previous or head)
    await execute(database, *PREVIOUS_RELEASE_ROWS)
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    async with engine_on(database) as engine, AsyncSession(engine) as session:
        linked = await queries.user(session, LINKED)
        anonymous = await queries.user(session, ANONYMOUS)
        owner = await repository.identity_owner(session, "idp-a", "subject-1")
        token = await repository.find_refresh_token(session, TOKEN)
        live = await repository.lock_family(session, LIVE_FAMILY)
        revoked = await repository.lock_family(session, REVOKED_FAMILY)
        keys = await queries.signing_keys(session)
    assert linked is not None and anonymous is not None
    assert (linked["display_name"], linked["email"], linked["is_pro"], linked["use_ai"]) == (
        "Zoë",
        "zoe@example.test",
        True,
        True,
    )
    assert anonymous["is_anonymous"] and not anonymous["is_pro"] and not anonymous["use_ai"]
    assert owner == LINKED
    assert token is not None and (token["family_id"], token["user_id"], token["used_at"]) == (LIVE_FAMILY, LINKED, None)
    assert live is not None and live["revoked_at"] is None
    assert revoked is not None and revoked["revoked_at"] is not None
    assert [(k["kid"], k["retired_at"]) for k in keys] == [("k1", None)]
