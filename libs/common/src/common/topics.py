"""The topics a process uses, checked before it reports ready (docs/decisions/0136-topics-have-one-creator.md).

Topics have one creator, which runs before any service starts: the chart's topic Job in a cluster,
``devstack`` locally. No process creates, deletes or reshapes a topic. Events are keyed by user id, so the
partition count decides which partition holds a user's events: a topic with another count than the one
the platform was configured with means a creator other than ours made it (a broker's auto-creation on
first use), and events written there would be ordered differently from what the consumers expect.

So each process, at start, reads the cluster's metadata and stays not ready (``/readyz`` 503, one clear
log line per distinct problem) until every topic it publishes to or reads exists with
``KAFKA_TOPIC_PARTITIONS`` partitions (any count when that is unset). The metadata request names no topic:
one that names a missing topic would create it on a broker with ``auto.create.topics.enable=true``.
Once the check has passed it stays passed: a later broker outage is a degraded state, not unreadiness
(decision 0032).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping

from aiokafka.client import AIOKafkaClient

from common.retry import Backoff

__all__ = ["TopicCheck", "TopicsNotReady", "partition_counts", "topic_problems"]

log = logging.getLogger("common.topics")

# How often a process whose topics are not right yet looks again, and repeats its log line at most.
RECHECK_SECONDS = (0.5, 10.0)
REPEAT_LOG_SECONDS = 60.0


class TopicsNotReady(RuntimeError):
    """The topics a process needs are missing or shaped differently from the configuration."""


async def partition_counts(bootstrap: str, *, request_timeout_ms: int = 5000) -> dict[str, int]:
    """Every topic of the cluster and its partition count, from one metadata request naming no topic."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap, request_timeout_ms=request_timeout_ms)
    try:
        await client.bootstrap()
        metadata = await client.fetch_all_metadata()
    finally:
        with contextlib.suppress(Exception):
            await client.close()
    return {topic: len(metadata.partitions_for_topic(topic) or ()) for topic in metadata.topics()}


def topic_problems(counts: Mapping[str, int], wanted: Iterable[str], partitions: int | None) -> list[str]:
    """What is wrong with ``wanted`` given the cluster's ``counts``: missing topics, other partition counts."""
    problems: list[str] = []
    for topic in sorted(set(wanted)):
        found = counts.get(topic)
        if found is None:
            problems.append(f"{topic} is missing")
        elif partitions is not None and found != partitions:
            problems.append(f"{topic} has {found} partitions, {partitions} expected")
    return problems


class TopicCheck:
    """A readiness check that passes once the process's topics were found as configured."""

    def __init__(self, *, service: str, bootstrap: str, topics: Iterable[str], partitions: int | None) -> None:
        self.service = service
        self.bootstrap = bootstrap
        self.topics = tuple(sorted(set(topics)))
        self.partitions = partitions
        self.passed = asyncio.Event()
        self.problem = "not checked yet"

    async def __call__(self) -> None:
        if not self.passed.is_set():
            raise TopicsNotReady(self.problem)

    async def run(self) -> None:
        """Look until the topics are right, then stop: the check never turns unready again."""
        backoff = Backoff(*RECHECK_SECONDS)
        logged: tuple[str, float] = ("", 0.0)
        loop = asyncio.get_running_loop()
        while not await self.check_once():
            if self.problem != logged[0] or loop.time() - logged[1] >= REPEAT_LOG_SECONDS:
                log.error(
                    "%s not ready: %s; topics are created by the topic Job (devstack locally) before the services "
                    "start, and the broker must not create them itself (auto.create.topics.enable=false)",
                    self.service,
                    self.problem,
                )
                logged = (self.problem, loop.time())
            await backoff.wait()
        log.info("%s: topics present: %s", self.service, ", ".join(self.topics))

    async def check_once(self) -> bool:
        try:
            counts = await partition_counts(self.bootstrap)
        except Exception as exc:  # the broker not answering yet is the common case at start
            self.problem = f"cannot read the topics from {self.bootstrap}: {type(exc).__name__}"
            return False
        problems = topic_problems(counts, self.topics, self.partitions)
        if problems:
            self.problem = "; ".join(problems)
            return False
        self.passed.set()
        return True
