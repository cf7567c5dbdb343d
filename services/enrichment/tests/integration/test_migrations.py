"""The enrichment migrations: an empty database upgraded to head is what the models describe, and data a
previous release wrote survives the upgrade and reads correctly. Older schemas come from running the
real chain up to a revision, never from altering a newer one."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from common.migrations import head_and_previous
from devstack.migration_checks import engine_on, execute, schema_problems, scratch_database, upgrade_to
from enrichment.migrate import MIGRATIONS_DIR, schema
from enrichment.store import queries, repository

USER = uuid.UUID("00000000-0000-4000-8000-0000000000e1")
DONE_JOB = uuid.UUID("00000000-0000-4000-8000-0000000000d1")
WAITING_JOB = uuid.UUID("00000000-0000-4000-8000-0000000000d2")
DONE_URL = "https://done.example/"
WAITING_URL = "https://waiting.example/"


@pytest.fixture
async def database(infra: Any) -> AsyncIterator[str]:
    async with scratch_database(infra.postgres, "enrichment_migration") as url:
        yield url


async def test_an_empty_database_upgraded_to_head_is_what_the_models_describe(database: str) -> None:
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    assert await schema_problems(database, schema()) == []


# What a previous release stores: plain SQL its schema accepts (only columns of the first release, so
# the rows stay valid whichever revision is the previous one).
PREVIOUS_RELEASE_ROWS = (
    "INSERT INTO jobs (id, normalized_url, url, charged_user_id, status, attempts, next_attempt_at, "
    "trace_context, updated_at) VALUES "
    f"('{DONE_JOB}', '{DONE_URL}', '{DONE_URL}', '{USER}', 'completed', 1, now(), '{{}}', now()), "
    f"('{WAITING_JOB}', '{WAITING_URL}', '{WAITING_URL}', '{USER}', 'retrying', 2, now() - interval '1 minute', "
    '\'{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}\', now())',
    "INSERT INTO bookmark_enrichments (user_id, client_bookmark_id, normalized_url, job_id, status, result, "
    "cache_hit, enriched_at) VALUES "
    f"('{USER}', 'done', '{DONE_URL}', '{DONE_JOB}', 'completed', '{{\"title\": \"Done\", \"tags\": [\"a\"]}}', "
    "false, now()), "
    f"('{USER}', 'waiting', '{WAITING_URL}', '{WAITING_JOB}', 'pending', NULL, false, NULL)",
    "INSERT INTO results_cache (normalized_url, result, job_id, expires_at) VALUES "
    f"('{DONE_URL}', '{{\"title\": \"Done\"}}', '{DONE_JOB}', now() + interval '7 days')",
    "INSERT INTO snapshots (normalized_url, kind, content_type, data, size_bytes, job_id) VALUES "
    f"('{DONE_URL}', 'html', 'text/html', '\\x3c703e', 3, '{DONE_JOB}')",
    f"INSERT INTO user_quotas (user_id, month, month_used) VALUES ('{USER}', date_trunc('month', now()), 2)",
    f"INSERT INTO quota_charges (user_id, charged_at, job_id) VALUES ('{USER}', now(), '{DONE_JOB}')",
    f"INSERT INTO users (user_id, use_ai, is_pro, deleted, event_at) VALUES ('{USER}', true, true, false, now())",
    "INSERT INTO bookmark_urls (user_id, client_bookmark_id, normalized_url, deleted, position) VALUES "
    f"('{USER}', 'done', '{DONE_URL}', false, now())",
    f"INSERT INTO user_tags (user_id, tag, uses) VALUES ('{USER}', 'news', 3), ('{USER}', 'tech', 1)",
)


async def test_data_of_the_previous_release_survives_the_upgrade_to_head(database: str) -> None:
    head, previous = head_and_previous(MIGRATIONS_DIR)
    await upgrade_to(MIGRATIONS_DIR, database, previous or head)
    await execute(database, *PREVIOUS_RELEASE_ROWS)
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    async with engine_on(database) as engine, AsyncSession(engine) as session:
        done = await queries.enrichment(session, USER, "done")
        waiting = await queries.enrichment(session, USER, "waiting")
        cached = await queries.cached_result(session, DONE_URL)
        capture = await queries.snapshot_for_bookmark(session, USER, "done", "html")
        projection = await queries.user_projection(session, USER)
        tags = await queries.user_tags(session, USER)
        counts = await queries.job_counts(session)
        due = await repository.next_due_job(session)
    assert done is not None and (done["status"], done["result"], done["job_status"]) == (
        "completed",
        {"title": "Done", "tags": ["a"]},
        "completed",
    )
    assert waiting is not None and waiting["job_status"] == "retrying"
    assert cached == {"title": "Done"} and tags == ["news", "tech"]
    assert capture is not None and (capture["content_type"], capture["data"]) == ("text/html", b"<p>")
    assert projection is not None and projection["use_ai"] and projection["is_pro"] and not projection["deleted"]
    assert counts == {"completed": 1, "retrying": 1}
    # The waiting job is still claimable, with the trace context it was created with.
    assert due is not None and due["id"] == WAITING_JOB and due["attempts"] == 2
    assert due["trace_context"]["traceparent"].startswith("00-0af7")
