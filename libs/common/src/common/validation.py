"""Field types for client input, shared by every service (one validator, one place).

- :data:`Timestamp`: an ISO 8601 date-time string only (no Unix numbers, no numeric strings, no bare
  dates), converted to UTC; anything PostgreSQL ``timestamptz`` or Python's ``datetime`` cannot hold
  after that conversion is refused.
- :data:`Text` / :data:`StrictText`: a string without NUL characters (PostgreSQL text cannot store
  ``\\u0000``; before this, such input ended as a 500 from the database).

Pydantic reports a refused value as a validation error on the field, which :mod:`common.handlers`
answers as 400 ``invalid-request`` naming the field. :func:`check_text` does the same for values that do
not come through a model (headers, hand-parsed parameters).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, StrictStr

from common.errors import InvalidRequest

# The date and time parts of RFC 3339 / ISO 8601 extended format; pydantic then parses the details.
_DATE_TIME_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")
NUL = "\x00"


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


def refuse_nul(value: str) -> str:
    if NUL in value:
        raise ValueError("must not contain NUL (\\u0000) characters")
    return value


Timestamp = Annotated[datetime, BeforeValidator(_iso8601_date_time), AfterValidator(to_utc)]
Text = Annotated[str, AfterValidator(refuse_nul)]
StrictText = Annotated[StrictStr, AfterValidator(refuse_nul)]


def check_text(field: str, value: str) -> str:
    """:func:`refuse_nul` for a value outside a model: 400 ``invalid-request`` naming ``field``."""
    try:
        return refuse_nul(value)
    except ValueError as exc:
        raise InvalidRequest(f"Field '{field}': {exc}.") from exc
