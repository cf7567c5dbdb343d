"""Fixtures shared by the event-plumbing tests; their helpers are in the sibling ``plumbing_support``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.events import TOPICS
from devstack.broker import EmbeddedBroker, ensure_topics
from devstack.testing import free_port

# The sibling helper module: pytest runs with --import-mode=importlib, which does not put test
# directories on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def own_broker() -> Iterator[EmbeddedBroker]:
    """A broker of this test's own, so stopping it cannot disturb other tests."""
    broker = EmbeddedBroker(free_port())
    broker.start()
    asyncio.run(ensure_topics(broker.bootstrap, TOPICS))
    yield broker
    broker.stop()
