"""A CLIENT span for every SQL statement run inside a traced operation, at the asyncpg level.

Every statement of every service goes through asyncpg: SQLAlchemy's asyncpg dialect (prepared statements:
``PreparedStatement.fetch`` and friends; ``Connection.execute`` for transaction control) and raw asyncpg
connections (``Connection`` methods) alike, so wrapping those methods covers both.

Why not ``opentelemetry-instrumentation-asyncpg``: it builds its attributes (and a span, dropped or not)
for every statement, also for the relay's and the worker's background polling, and added 0.5-0.9 ms of
bookmarks CPU per write in ``bench/bookmarks_write_cpu.py``. Here a statement first asks whether the
current span records; when it does not (no request, event or attempt around it) the call goes straight
through, and when it does the span carries three attributes: ``db.system.name``, ``db.operation.name``
(the statement's first word) and ``db.query.text`` (the statement without its parameters, which are
never recorded).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Final

import asyncpg.connection
import asyncpg.prepared_stmt
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

_tracer = trace.get_tracer("common.sql")

_CONNECTION_METHODS: Final = ("execute", "executemany", "fetch", "fetchval", "fetchrow")
_PREPARED_METHODS: Final = ("fetch", "fetchval", "fetchrow", "executemany", "fetchmany")
_MARK: Final = "__bookmarks_sql_span__"

_installed = False


def install() -> None:
    """Wrap asyncpg's statement methods once per process."""
    global _installed
    if _installed:
        return
    for name in _CONNECTION_METHODS:
        _wrap(asyncpg.connection.Connection, name, _connection_query)
    for name in _PREPARED_METHODS:
        _wrap(asyncpg.prepared_stmt.PreparedStatement, name, _prepared_query)
    _installed = True


def _connection_query(instance: Any, args: tuple[Any, ...]) -> str:
    return str(args[0]) if args else ""


def _prepared_query(instance: Any, args: tuple[Any, ...]) -> str:
    return str(instance.get_query())


def _wrap(owner: type, name: str, query_of: Callable[[Any, tuple[Any, ...]], str]) -> None:
    original: Callable[..., Awaitable[Any]] = getattr(owner, name)
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    async def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not trace.get_current_span().is_recording():
            return await original(self, *args, **kwargs)
        query = query_of(self, args)
        operation = query.lstrip().split(None, 1)[0].upper() if query.strip() else "SQL"
        attributes = {"db.system.name": "postgresql", "db.operation.name": operation, "db.query.text": query}
        with _tracer.start_as_current_span(
            operation, kind=SpanKind.CLIENT, attributes=attributes, record_exception=False
        ) as span:
            try:
                return await original(self, *args, **kwargs)
            except Exception as exc:
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                raise

    setattr(traced, _MARK, True)
    setattr(owner, name, traced)
