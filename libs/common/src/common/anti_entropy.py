"""Anti-entropy between a projection and its source (docs/decisions/0131-anti-entropy.md).

Both sides summarise one user's records the same way, in SQL, so a user with 100,000 records costs one
grouped scan and 64 small numbers when nothing differs:

- a record is (id, value), value being the text the projection keeps of it (e.g. a normalized URL);
  only live records take part (a deleted record and an absent one mean the same: "not there");
- its bucket is 6 bits of md5(id), so a record keeps its bucket when its value changes;
- its hash is 64 bits of md5(length(id) ':' id value) (the length prefix keeps ("ab", "c") and
  ("a", "bc") apart);
- a bucket's digest is (count, bit_xor of the hashes): equal digests mean, short of a 64-bit collision,
  equal records.

Only differing buckets are drilled down to per-id hashes. The comparison itself is pure (below); the
SQL expressions are the only part both services must build identically, hence here.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import BigInteger, ColumnElement, Integer, case, cast, func, literal
from sqlalchemy.dialects.postgresql import BIT

BUCKETS = 64
_BUCKET_MASK = BUCKETS - 1
# Limits of one internal request: a page of users, the ids of one drill-down or re-publish.
MAX_USERS_PER_REQUEST = 1000
MAX_IDS_PER_REQUEST = 1000


def _hex_to_int(hex_digits: ColumnElement[str], bits: int) -> ColumnElement[int]:
    """The leading ``bits`` of a hex string as a signed integer ('x…'::bit(n)::bigint)."""
    prefix = func.substr(hex_digits, 1, bits // 4)
    return cast(cast(literal("x").concat(prefix), BIT(bits)), BigInteger if bits == 64 else Integer)


def bucket_of(record_id: ColumnElement[str]) -> ColumnElement[int]:
    """The record's bucket, 0..63, from its id alone."""
    return _hex_to_int(func.md5(record_id), 32).op("&")(_BUCKET_MASK)


def record_hash(record_id: ColumnElement[str], value: ColumnElement[str]) -> ColumnElement[int]:
    """64 bits of the record's (id, value)."""
    text_of = func.concat(func.length(record_id), literal(":"), record_id, value)
    return _hex_to_int(func.md5(text_of), 64)


def flags_value(*flags: ColumnElement[bool]) -> ColumnElement[str]:
    """Booleans as the text a record hash takes ('1'/'0' each, in order): both sides render them alike."""
    return func.concat(*(case((flag, "1"), else_="0") for flag in flags))


# --- the wire: what the source's internal routes take and answer ------------------------------------


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DigestRequest(_Wire):
    """The source's digests of the users after ``after`` (by id), at most ``limit`` of them."""

    after: uuid.UUID | None = None
    limit: int = Field(200, ge=1, le=MAX_USERS_PER_REQUEST)


class UserDigest(_Wire):
    userId: uuid.UUID
    # bucket → [count, bit_xor]; an absent bucket is empty.
    buckets: dict[int, tuple[int, int]]


class DigestPage(_Wire):
    users: list[UserDigest]
    # True when the users after the last one listed were not looked at (another page follows).
    more: bool


class RecordsRequest(_Wire):
    """The source's records of one user in some buckets, and which of them changed lately."""

    userId: uuid.UUID
    buckets: list[int] = Field(max_length=BUCKETS)
    settleSeconds: float = Field(0.0, ge=0)


class RecordHashes(_Wire):
    # id → hash of every live record in the buckets asked for.
    hashes: dict[str, int]
    # Ids in those buckets (live or deleted) changed within settleSeconds: their events may be in flight.
    unsettled: list[str]


class RepublishRequest(_Wire):
    userId: uuid.UUID
    ids: list[str] = Field(min_length=1, max_length=MAX_IDS_PER_REQUEST)


class Republished(_Wire):
    republished: int


# A projection of users (one record per user) is compared a range of user ids at a time: the source
# chooses the range, (after, upTo], from its own next ``limit`` users; upTo None means "to the end".


class RangeRequest(_Wire):
    after: uuid.UUID | None = None
    limit: int = Field(MAX_USERS_PER_REQUEST, ge=1, le=MAX_USERS_PER_REQUEST)


class RangeDigest(_Wire):
    upTo: uuid.UUID | None
    count: int
    xor: int
    more: bool


class RangeRecordsRequest(_Wire):
    after: uuid.UUID | None = None
    upTo: uuid.UUID | None = None
    settleSeconds: float = Field(0.0, ge=0)


class UsersRepublishRequest(_Wire):
    userIds: list[uuid.UUID] = Field(min_length=1, max_length=MAX_IDS_PER_REQUEST)


# --- the comparison (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BucketDigest:
    count: int
    xor: int


Digest = Mapping[int, BucketDigest]


def digest_of(buckets: Mapping[int, tuple[int, int]]) -> dict[int, BucketDigest]:
    """The wire's bucket pairs as digests; empty buckets dropped, so absent and (0, 0) compare equal."""
    return {b: BucketDigest(count, xor) for b, (count, xor) in buckets.items() if count}


def differing_buckets(source: Digest, projection: Digest) -> list[int]:
    """Buckets whose digests differ, in order."""
    return sorted(b for b in source.keys() | projection.keys() if source.get(b) != projection.get(b))


def differing_ids(
    source: Mapping[str, int], projection: Mapping[str, int], *, unsettled: Collection[str] = ()
) -> list[str]:
    """Ids whose live record is missing on one side or hashes differently, in order; ids the source
    changed lately are left out (their events may still be on the way)."""
    candidates = source.keys() | projection.keys()
    skip = set(unsettled)
    return sorted(i for i in candidates if i not in skip and source.get(i) != projection.get(i))


def chunks(ids: Sequence[str], size: int = MAX_IDS_PER_REQUEST) -> list[Sequence[str]]:
    return [ids[start : start + size] for start in range(0, len(ids), size)]
