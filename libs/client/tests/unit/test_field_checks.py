"""The checks a generated field of a new kind gets (bookmark_client.fields): the server's rules, mirrored,
so a write the server would refuse never enters the offline queue."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from bookmark_client import fields as f


@pytest.mark.parametrize(("value", "written"), [(None, None), (0, 0), (-(2**63), -(2**63)), (2**63 - 1, 2**63 - 1)])
def test_integer_takes_64_bit_integers(value: Any, written: Any) -> None:
    assert f.integer("n", value) == written


@pytest.mark.parametrize("value", [True, 1.0, "1", 2**63, -(2**63) - 1])
def test_integer_refuses_the_rest(value: Any) -> None:
    with pytest.raises(ValueError, match="64-bit integer"):
        f.integer("n", value)


def test_date_takes_calendar_dates_as_written_on_the_wire() -> None:
    assert f.date("d", None) is None
    assert f.date("d", "2026-02-03") == "2026-02-03"
    assert f.date("d", dt.date(2026, 2, 3)) == "2026-02-03"


@pytest.mark.parametrize(
    "value", ["2026-02-30", "2026-02-03T00:00:00Z", "yesterday", 1_700_000_000, dt.datetime(2026, 1, 1)]
)
def test_date_refuses_the_rest(value: Any) -> None:
    with pytest.raises(ValueError, match="date"):
        f.date("d", value)


def test_one_of_takes_the_declared_values_only() -> None:
    check = f.one_of(("calm", "busy"))
    assert check("m", "busy") == "busy" and check("m", None) is None
    with pytest.raises(ValueError, match="one of calm, busy"):
        check("m", "dim")


def test_strings_are_bounded_and_storable() -> None:
    assert f.strings("s", ("a", "b")) == ["a", "b"] and f.strings("s", None) is None
    for refused in ("ab", ["x" * (f.MAX_TEXT + 1)], ["a"] * (f.MAX_LIST_ITEMS + 1), ["a\x00"], [1]):
        with pytest.raises(ValueError):
            f.strings("s", refused)
