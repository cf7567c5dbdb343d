"""The topic rules: what a process checks before it is ready, and that no code path deletes a topic."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from common.topics import TopicCheck, TopicsNotReady, topic_problems

ROOT = Path(__file__).resolve().parents[4]


def test_topics_present_with_the_configured_count_have_no_problem() -> None:
    assert topic_problems({"a": 4, "b": 4, "other": 1}, ["a", "b"], 4) == []


def test_a_missing_topic_and_another_partition_count_are_named() -> None:
    problems = topic_problems({"a": 3}, ["b", "a"], 4)
    assert problems == ["a has 3 partitions, 4 expected", "b is missing"]


def test_without_a_configured_count_any_count_will_do() -> None:
    assert topic_problems({"a": 12}, ["a"], None) == []
    assert topic_problems({}, ["a"], None) == ["a is missing"]


def test_the_readiness_check_fails_until_the_topics_were_found() -> None:
    # A port nothing listens on: the check cannot pass and says why.
    check = TopicCheck(service="test", bootstrap="127.0.0.1:9", topics=["a"], partitions=4)

    async def scenario() -> None:
        with pytest.raises(TopicsNotReady, match="not checked yet"):
            await check()
        assert not await check.check_once()
        with pytest.raises(TopicsNotReady, match="cannot read the topics"):
            await check()

    asyncio.run(scenario())


def test_no_code_deletes_or_resizes_a_topic() -> None:
    """Topics have one creator and are never deleted (docs/decisions/0136-topics-have-one-creator.md):
    a delete drops acknowledged records, a new partition count moves users to other partitions."""
    pattern = re.compile(r"\b(delete_topics|create_partitions|DeleteTopicsRequest|CreatePartitionsRequest)\b")
    sources = [*ROOT.glob("libs/*/src/**/*.py"), *ROOT.glob("services/*/src/**/*.py"), *ROOT.glob("deploy/**/*.yaml")]
    assert sources
    offenders = [str(p.relative_to(ROOT)) for p in sources if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
