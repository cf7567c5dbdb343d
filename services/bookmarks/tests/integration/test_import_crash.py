"""A real crash of the process running an import (docs/api-guide.md, section 13: "kill the process mid-import: it
resumes and imports every item exactly once").

Two real ``python -m bookmarks`` processes on a database of their own (no other worker can interfere):
the first is SIGKILLed after it has committed a few batches, the second resumes from the checkpoint.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine

from bookmarks.imports.tables import import_report, imports
from bookmarks.store.tables import bookmarks
from devstack.stack import free_port
from devstack.testing import LocalJwksServer

pytestmark = pytest.mark.asyncio(loop_scope="session")

ITEMS = 3000


def netscape(count: int) -> bytes:
    """``count`` items: every 10th repeats an earlier URL (merges), every 97th is invalid."""
    rows = []
    for i in range(count):
        if i % 97 == 96:
            url = f"javascript:void({i})"
        elif i % 10 == 9:
            url = f"https://crash.example/{i - 5}"
        else:
            url = f"https://crash.example/{i}"
        folder = f"Folder {i % 7}"
        rows.append(f'<DT><H3>{folder}</H3><DL><p><DT><A HREF="{url}" TAGS="t{i % 5}">Item {i}</A></DL><p>')
    body = "\n".join(rows)
    return f"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n{body}\n</DL><p>\n".encode()


@contextmanager
def bookmarks_process(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    child_env = {**os.environ, **env, "BOOKMARKS_PORT": str(port), "BOOKMARKS_METRICS_PORT": str(free_port())}
    process = subprocess.Popen(  # noqa: S603 - our own service
        [sys.executable, "-m", "bookmarks"], env=child_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


async def wait_ready(base: str) -> None:
    async with httpx.AsyncClient(base_url=base) as client:
        for _ in range(600):
            try:
                if (await client.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("bookmarks process did not start")


async def test_an_import_killed_mid_way_resumes_and_imports_every_item_exactly_once(
    infra: Any, access_jwks: LocalJwksServer
) -> None:
    url = infra.fresh_database("bookmarks")  # only this test's processes work on it
    env = {
        "DATABASE_URL_BOOKMARKS": url,
        "KAFKA_BOOTSTRAP_SERVERS": infra.kafka_bootstrap,
        "AUTH_URL": f"http://127.0.0.1:{access_jwks.port}",
        "IMPORT_BATCH_SIZE": "20",
        "IMPORT_LEASE_SECONDS": "3",
        "IMPORT_POLL_SECONDS": "0.5",
    }
    user = uuid.uuid4()
    headers = {"Authorization": f"Bearer {access_jwks.mint(sub=str(user), claims={'jti': uuid.uuid4().hex})}"}
    engine = create_async_engine(url)
    try:
        with bookmarks_process(env) as (first, base):
            await wait_ready(base)
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                response = await client.post(
                    "/v1/imports", headers=headers, files={"file": ("b.html", netscape(ITEMS))}
                )
            assert response.status_code == 202, response.text
            import_id = uuid.UUID(response.json()["data"]["id"])
            processed = await wait_for_progress(engine, import_id, at_least=60)
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        async with engine.connect() as connection:
            at_kill = (await connection.execute(select(imports).where(imports.c.id == import_id))).mappings().one()
        assert at_kill["status"] == "running" and processed <= at_kill["processed"] < ITEMS

        with bookmarks_process(env) as (_, base):
            await wait_ready(base)
            record = await wait_finished(base, headers, import_id)
        await check_exactly_once(engine, import_id, user, record)
    finally:
        await engine.dispose()


async def wait_for_progress(engine: Any, import_id: uuid.UUID, *, at_least: int) -> int:
    for _ in range(3000):
        async with engine.connect() as connection:
            row = (await connection.execute(select(imports.c.processed).where(imports.c.id == import_id))).one()
        if row.processed >= at_least:
            return int(row.processed)
        await asyncio.sleep(0.02)
    raise AssertionError("the import made no progress")


async def wait_finished(base: str, headers: dict[str, str], import_id: uuid.UUID) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        for _ in range(1800):
            record: dict[str, Any] = (await client.get(f"/v1/imports/{import_id}", headers=headers)).json()["data"]
            if record["status"] in ("completed", "failed"):
                return record
            await asyncio.sleep(0.1)
    raise AssertionError("the resumed import did not finish")


async def check_exactly_once(
    engine: Any, import_id: uuid.UUID, user: uuid.UUID, record: dict[str, Any], *, claims_expected: int = 2
) -> None:
    invalid = sum(1 for i in range(ITEMS) if i % 97 == 96)
    distinct = len({i - 5 if i % 10 == 9 else i for i in range(ITEMS) if i % 97 != 96})
    assert record["status"] == "completed"
    assert (record["total"], record["processed"], record["invalid"]) == (ITEMS, ITEMS, invalid)
    assert record["created"] == distinct
    assert record["created"] + record["updated"] + record["unchanged"] + record["invalid"] == ITEMS
    async with engine.connect() as connection:
        ordinals = (
            (
                await connection.execute(
                    select(import_report.c.ordinal)
                    .where(import_report.c.import_id == import_id)
                    .order_by(import_report.c.ordinal)
                )
            )
            .scalars()
            .all()
        )
        stored = (
            await connection.execute(
                select(func.count(), func.count(func.distinct(bookmarks.c.normalized_url))).where(
                    bookmarks.c.owner_uid == user
                )
            )
        ).one()
        claims = (await connection.execute(select(imports.c.claims).where(imports.c.id == import_id))).scalar_one()
    assert list(ordinals) == list(range(ITEMS))  # one report row per item: none skipped, none twice
    assert tuple(stored) == (distinct, distinct)  # one bookmark per distinct URL: no item imported twice
    assert claims == claims_expected


@contextmanager
def postgres_stopped(infra: Any) -> Iterator[None]:
    """SIGSTOP the stack's postmaster and every backend (nothing closed); SIGCONT on the way out."""
    postmaster = int((Path(infra.postgres.data_dir) / "postmaster.pid").read_text().split("\n", 1)[0])
    pids = [postmaster, *(c.pid for c in psutil.Process(postmaster).children(recursive=True))]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in reversed(pids):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


async def test_an_import_running_while_the_database_hangs_resumes_under_its_own_claim(
    infra: Any, access_jwks: LocalJwksServer
) -> None:
    url = infra.fresh_database("bookmarks")
    env = {
        "DATABASE_URL_BOOKMARKS": url,
        "KAFKA_BOOTSTRAP_SERVERS": infra.kafka_bootstrap,
        "AUTH_URL": f"http://127.0.0.1:{access_jwks.port}",
        "IMPORT_BATCH_SIZE": "20",
        "IMPORT_LEASE_SECONDS": "60",  # longer than the hang: the lease must survive it
        "IMPORT_POLL_SECONDS": "0.5",
    }
    user = uuid.uuid4()
    headers = {"Authorization": f"Bearer {access_jwks.mint(sub=str(user), claims={'jti': uuid.uuid4().hex})}"}
    engine = create_async_engine(url)
    try:
        with bookmarks_process(env) as (_, base):
            await wait_ready(base)
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                response = await client.post(
                    "/v1/imports", headers=headers, files={"file": ("b.html", netscape(ITEMS))}
                )
            assert response.status_code == 202, response.text
            import_id = uuid.UUID(response.json()["data"]["id"])
            await wait_for_progress(engine, import_id, at_least=60)
            with postgres_stopped(infra):
                await asyncio.sleep(6)  # longer than every database deadline: the batch in progress fails
            record = await wait_finished(base, headers, import_id)
        await check_exactly_once(engine, import_id, user, record, claims_expected=1)
    finally:
        await engine.dispose()
