"""The pure side of anti-entropy (common.anti_entropy): which buckets and ids differ, and what the wire
accepts. The SQL side (the same digest in both databases) is covered by the enrichment integration test."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from common.anti_entropy import (
    BUCKETS,
    MAX_IDS_PER_REQUEST,
    BucketDigest,
    RecordsRequest,
    RepublishRequest,
    chunks,
    differing_buckets,
    differing_ids,
    digest_of,
)


def test_equal_digests_differ_nowhere() -> None:
    digest = {0: BucketDigest(3, 99), 63: BucketDigest(1, -5)}
    assert differing_buckets(digest, dict(digest)) == []


def test_a_bucket_differs_by_count_or_by_hash_or_by_being_on_one_side_only() -> None:
    source = {1: BucketDigest(2, 10), 2: BucketDigest(2, 10), 3: BucketDigest(1, 7)}
    projection = {1: BucketDigest(3, 10), 2: BucketDigest(2, 11), 4: BucketDigest(1, 7)}
    assert differing_buckets(source, projection) == [1, 2, 3, 4]


def test_an_empty_bucket_and_an_absent_one_are_the_same() -> None:
    assert digest_of({5: (0, 0), 6: (2, 42)}) == {6: BucketDigest(2, 42)}
    assert differing_buckets(digest_of({5: (0, 0)}), digest_of({})) == []


def test_ids_differ_when_missing_extra_or_hashed_differently() -> None:
    source = {"same": 1, "missing": 2, "changed": 3}
    projection = {"same": 1, "changed": 4, "extra": 5}
    assert differing_ids(source, projection) == ["changed", "extra", "missing"]


def test_ids_the_source_changed_lately_are_left_to_their_events() -> None:
    source = {"a": 1, "b": 2}
    projection = {"a": 9}
    assert differing_ids(source, projection, unsettled=["a"]) == ["b"]
    assert differing_ids(source, {"a": 1, "b": 2}, unsettled=["a"]) == []


def test_chunks_cover_every_id_once_within_the_request_limit() -> None:
    ids = [f"b{i}" for i in range(2 * MAX_IDS_PER_REQUEST + 1)]
    parts = chunks(ids)
    assert [len(p) for p in parts] == [MAX_IDS_PER_REQUEST, MAX_IDS_PER_REQUEST, 1]
    assert [i for p in parts for i in p] == ids


def test_requests_are_bounded() -> None:
    user = uuid.uuid4()
    with pytest.raises(ValidationError):
        RepublishRequest(userId=user, ids=[])
    with pytest.raises(ValidationError):
        RepublishRequest(userId=user, ids=["x"] * (MAX_IDS_PER_REQUEST + 1))
    with pytest.raises(ValidationError):
        RecordsRequest(userId=user, buckets=list(range(BUCKETS + 1)))
