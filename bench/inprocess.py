"""Helpers of the benchmarks that measure in their own process: a private PostgreSQL, interleaved rounds."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TypeVar

from devstack.postgres import EmbeddedPostgres
from devstack.stack import free_port

T = TypeVar("T")
W = TypeVar("W")
R = TypeVar("R")


def on_private_postgres(prefix: str, run: Callable[[str], Awaitable[T]]) -> T:
    """``run(dsn)`` on a fresh database ``bench`` of a PostgreSQL started for it (private data directory,
    free port, not durable) and stopped after it."""
    with tempfile.TemporaryDirectory(prefix=prefix) as data_dir:
        with EmbeddedPostgres(Path(data_dir), free_port(), durable=False) as pg:
            pg.ensure_databases(["bench"])
            return asyncio.run(run(pg.dsn("bench")))


async def interleaved(ways: Mapping[str, W], measure: Callable[[W], Awaitable[R]], rounds: int) -> dict[str, list[R]]:
    """Each way measured once to warm up (pool, compiled caches, prepared statements), then once per round,
    the ways in turn, the order turned every round: what the machine does meanwhile falls on all of them."""
    for way in ways.values():
        await measure(way)
    names = list(ways)
    results: dict[str, list[R]] = {name: [] for name in names}
    for n in range(rounds):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            results[name].append(await measure(ways[name]))
    return results
