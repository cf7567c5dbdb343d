"""Field types for client input, shared by every service (one validator, one place).

- :data:`Timestamp`: an ISO 8601 date-time string only (no Unix numbers, no numeric strings, no bare
  dates), converted to UTC; anything PostgreSQL ``timestamptz`` or Python's ``datetime`` cannot hold
  after that conversion is refused.
- :data:`CLIENT_ID_PATTERN`: the ids clients choose (``clientBookmarkId``, collection ids), in a path, a
  query or a body.
- :data:`Text` / :data:`StrictText`: a string PostgreSQL can store: no NUL character (``\\u0000``) and no
  unpaired surrogate (``"\\ud800"`` is valid JSON but not UTF-8).

Pydantic reports a refused value as a validation error on the field, which :mod:`common.handlers`
answers as 400 ``invalid-request`` naming the field. :func:`is_storable` is the same rule for text that
does not come from a client (identity-provider claims), where the caller decides what to do.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, StrictStr

# The date and time parts of RFC 3339 / ISO 8601 extended format; pydantic then parses the details.
_DATE_TIME_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
NUL = "\x00"
# Ids a client chooses for its records. The reference client (libs/client) does not depend on this
# library and keeps a copy; its unit tests hold the copy equal to this one.
CLIENT_ID_PATTERN = r"^[a-zA-Z0-9_-]{1,128}$"
CLIENT_ID_RE = re.compile(CLIENT_ID_PATTERN)


def _iso8601_date_time(value: Any) -> Any:
    """Before pydantic's lax parsing, which would read ``1700000000`` or ``"1"`` as Unix times."""
    if isinstance(value, datetime):  # built in code, not sent by a client
        return value
    if not isinstance(value, str) or not _DATE_TIME_SHAPE.match(value):
        raise ValueError("must be an ISO 8601 date-time string such as 2026-01-31T12:00:00Z")
    return value


def to_utc(value: datetime) -> datetime:
    """The same instant in UTC (naive values are taken as UTC); ValueError when out of range."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("is outside the supported range of years 0001-9999 (UTC)") from exc


def refuse_unstorable(value: str) -> str:
    """``value`` when PostgreSQL can store it as text; ValueError (NUL, unpaired surrogate) otherwise."""
    if NUL in value:
        raise ValueError("must not contain NUL (\\u0000) characters")
    if _SURROGATE.search(value):
        raise ValueError("must be valid Unicode (an unpaired surrogate such as \\ud800 is not)")
    return value


def is_storable(value: str) -> bool:
    try:
        refuse_unstorable(value)
    except ValueError:
        return False
    return True


Timestamp = Annotated[datetime, BeforeValidator(_iso8601_date_time), AfterValidator(to_utc)]
Text = Annotated[str, AfterValidator(refuse_unstorable)]
StrictText = Annotated[StrictStr, AfterValidator(refuse_unstorable)]
