"""Which failures are an infrastructure outage (the database or the network away) rather than a bug.

One classifier for the whole platform: the HTTP error handlers answer an outage ``503 unavailable`` with
``Retry-After`` (clients retry; the 5xx alert does not page for it), and the event consumer retries an
outage without limit instead of counting it towards parking an event in the dead letters.

An outage is, anywhere in the exception's cause/context chain:

* a network failure: ``ConnectionError`` (refused, reset, aborted, broken pipe), ``TimeoutError``, a
  name-resolution error, or a plain ``OSError`` with a network errno — or asyncpg's "Multiple
  exceptions" ``OSError`` when every address of the host refused. File-system errors (``FileNotFoundError``
  and the other ``OSError`` subclasses) are bugs, not outages;
* SQLAlchemy's pool timeout (every connection busy for ``pool_timeout``) or a connection SQLAlchemy
  itself declared invalidated (it broke mid-statement); outside SQLAlchemy (a raw asyncpg connection,
  e.g. one that LISTENs), asyncpg's "connection is closed", the same test SQLAlchemy applies;
* a PostgreSQL error whose SQLSTATE says so: class 08 (connection exception), 57P01-57P03 (admin or
  crash shutdown, "the database system is starting up / in recovery"), 53300 (too many connections);
* a connection the server is dropping (:func:`is_server_dropping`).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator

import asyncpg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

__all__ = ["OUTAGE_SQLSTATES", "is_outage", "is_server_dropping"]

OUTAGE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
_CONNECTION_EXCEPTION_CLASS = "08"
_MAX_CHAIN = 16
_NETWORK_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.ETIMEDOUT,
        errno.EPIPE,
        errno.EADDRNOTAVAIL,
    }
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return state if isinstance(state, str) else None


def _is_network_error(exc: OSError) -> bool:
    if isinstance(exc, ConnectionError | TimeoutError | socket.gaierror):
        return True
    if type(exc) is not OSError:
        return False  # FileNotFoundError, PermissionError, ...: the file system, not the network
    return exc.errno in _NETWORK_ERRNOS or (exc.errno is None and str(exc).startswith("Multiple exceptions"))


# asyncpg's refusal to start an operation while its protocol still consumes an error (state 2,
# PROTOCOL_ERROR_CONSUME; the states are asyncpg's coreproto.pxd).
_STILL_CONSUMING_AN_ERROR = "another operation (2) is in progress"


def is_server_dropping(exc: BaseException) -> bool:
    """Whether ``exc`` is asyncpg refusing an operation on a connection the server is dropping.

    A backend that is shut down, killed or orphaned by a crashed postmaster sends a FATAL error to its
    idle connection, then closes the socket. asyncpg reads the error first, and its protocol waits for a
    ready-for-query message that never comes; until the socket's end arrives, the connection still
    reports itself open, and every operation fails with this ``InternalClientError``, which
    must answer 503 like any outage, not 500. Only an error the server sent on its own leaves an
    idle connection in that state: an error answering our own statement ends with ready-for-query.
    """
    return isinstance(exc, asyncpg.InternalClientError) and _STILL_CONSUMING_AN_ERROR in str(exc)


def _is_outage_link(exc: BaseException) -> bool:
    if is_server_dropping(exc):
        return True
    if isinstance(exc, OSError) and _is_network_error(exc):
        return True
    if isinstance(exc, PoolTimeoutError):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, asyncpg.InterfaceError) and "connection is closed" in str(exc):
        return True
    state = _sqlstate(exc)
    return state is not None and (state.startswith(_CONNECTION_EXCEPTION_CLASS) or state in OUTAGE_SQLSTATES)


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` (or anything it was raised from) is a database/network outage, not a bug."""
    return any(_is_outage_link(link) for link in _chain(exc))
