"""Anti-entropy of the users projection (consent and plan, fed by ``user.updated``) against auth
(docs/decisions/0131-anti-entropy.md).

Users are compared a range of ids at a time: auth picks the range from its next users, both sides
digest it, and a differing range is drilled down to per-user hashes. Auth re-publishes ``user.updated``
for users it has whose record here is missing or different; a new event id and a newer ``occurredAt`` let
it through the inbox and the projection's guard. Two differences are left alone on purpose: a user this
service has purged stays purged (deletion is final), and a user auth does not have is never deleted from
here (a ``user.deleted`` purges a library everywhere; a restored auth database must not cause that).
"""

from __future__ import annotations

import logging
import uuid

from common import anti_entropy as ae
from common.db import SessionFactory
from common.metrics import ANTI_ENTROPY_REPAIRED
from enrichment.anti_entropy import SERVICE, AuthSource, CheckConfig, InFlight
from enrichment.store import digests

log = logging.getLogger("enrichment.anti_entropy")

PROJECTION = "users"
# In-flight memory keys are (user, record id); a user is its own record here.
_NO_OWNER = uuid.UUID(int=0)


async def check_users(*, sessions: SessionFactory, source: AuthSource, config: CheckConfig, in_flight: InFlight) -> int:
    """Compare every user with auth once and have differences re-published; how many were."""
    after: uuid.UUID | None = None
    repaired = 0
    while True:
        page = await source.digest(after=after, limit=ae.MAX_USERS_PER_REQUEST)
        repaired += await _check_range(
            sessions=sessions, source=source, after=after, page=page, config=config, in_flight=in_flight
        )
        if not page.more:
            return repaired
        after = page.upTo


async def _check_range(
    *,
    sessions: SessionFactory,
    source: AuthSource,
    after: uuid.UUID | None,
    page: ae.RangeDigest,
    config: CheckConfig,
    in_flight: InFlight,
) -> int:
    async with sessions() as session:
        ours = await digests.user_digest(session, after=after, up_to=page.upTo)
    if ours == (page.count, page.xor):
        return 0
    theirs = await source.records(after=after, up_to=page.upTo, settle_seconds=config.settle_seconds)
    async with sessions() as session:
        our_hashes = await digests.user_hashes(session, after=after, up_to=page.upTo)
        differing = ae.differing_ids(theirs.hashes, our_hashes, unsettled=theirs.unsettled)
        # Only users auth has can be re-published; of those, not the ones purged here.
        candidates = [uuid.UUID(i) for i in differing if i in theirs.hashes]
        purged = await digests.deleted_users(session, candidates)
    repairable = [str(i) for i in candidates if i not in purged]
    ids = in_flight.leave_out(_NO_OWNER, repairable)
    return await _republish(source=source, ids=ids, in_flight=in_flight, left_alone=len(differing) - len(repairable))


async def _republish(*, source: AuthSource, ids: list[str], in_flight: InFlight, left_alone: int) -> int:
    republished = 0
    for chunk in ae.chunks(ids):
        count = await source.republish(user_ids=[uuid.UUID(i) for i in chunk])
        in_flight.mark(_NO_OWNER, chunk)
        ANTI_ENTROPY_REPAIRED.labels(SERVICE, PROJECTION).inc(count)
        republished += count
    if ids or left_alone:
        log.warning(
            "users projection differed from auth; re-published",
            extra={"projection": PROJECTION, "republished": republished, "left_alone": left_alone, "sample": ids[:5]},
        )
    return republished
