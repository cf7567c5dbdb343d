"""The bookmarks service's periodic work: the trash's retention purge and expired bulk-undo records.

Every replica runs it every TRASH_PURGE_INTERVAL_SECONDS; each step works in bounded batches that skip
rows another replica holds, so passes never wait on each other and a pass cut short leaves nothing half
done."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from bookmarks.bulk import store as bulk_store
from bookmarks.trash.service import purge_expired
from common.db import SessionFactory, transaction

log = logging.getLogger("bookmarks.housekeeping")


async def housekeeping_pass(*, sessions: SessionFactory, retention: timedelta) -> None:
    purged = await purge_expired(sessions=sessions, retention=retention)
    async with transaction(sessions) as session:
        forgotten = await bulk_store.delete_expired(session, now=datetime.now(UTC))
    if purged or forgotten:
        log.info("housekeeping", extra={"trash_purged": purged, "bulk_undo_expired": forgotten})


async def run_housekeeping(*, sessions: SessionFactory, retention: timedelta, interval_seconds: float) -> None:
    while True:
        try:
            await housekeeping_pass(sessions=sessions, retention=retention)
        except asyncio.CancelledError:
            raise
        except Exception:  # a database outage: the next pass retries
            log.warning("housekeeping failed; retrying next pass", exc_info=True)
        await asyncio.sleep(interval_seconds)
