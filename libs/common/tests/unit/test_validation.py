"""The shared input types: ISO 8601 date-times in range only, no NUL in client text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import BaseModel, ValidationError

from common.validation import StrictText, Text, Timestamp, is_storable


class Model(BaseModel):
    at: Timestamp | None = None
    text: Text | None = None
    strict: StrictText | None = None
    items: list[Text] | None = None


@pytest.mark.parametrize(
    "value",
    [
        1700000000,
        1.5,
        "1",
        "1700000000",
        "1700000000.5",
        "-1",
        "",
        "yesterday",
        "2026-01-31",
        "2026-13-45T00:00:00Z",
        True,
        [],
        {},
        "9999-12-31T23:59:59-23:59",
        "0001-01-01T00:00:00+14:00",
        "10000-01-01T00:00:00Z",
    ],
)
def test_timestamps_refused(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Model(at=value)
    assert caught.value.errors()[0]["loc"] == ("at",)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-01-31T12:00:00Z", datetime(2026, 1, 31, 12, tzinfo=UTC)),
        ("2026-01-31T12:00:00.123456+02:00", datetime(2026, 1, 31, 10, 0, 0, 123456, tzinfo=UTC)),
        ("2026-01-31T12:00:00", datetime(2026, 1, 31, 12, tzinfo=UTC)),
        ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("0001-01-01T00:00:00-01:00", datetime(1, 1, 1, 1, tzinfo=UTC)),
    ],
)
def test_timestamps_accepted_and_converted_to_utc(value: str, expected: datetime) -> None:
    parsed = Model(at=value).at
    assert parsed == expected and parsed is not None and parsed.utcoffset() == timedelta(0)


def test_datetime_objects_from_code_are_accepted() -> None:
    at = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=1)))
    assert Model(at=at).at == at


@pytest.mark.parametrize("field", ["text", "strict", "items"])
def test_nul_is_refused_in_text(field: str) -> None:
    value: object = ["ok", "a\x00b"] if field == "items" else "a\x00b"
    with pytest.raises(ValidationError) as caught:
        Model(**{field: value})
    assert caught.value.errors()[0]["loc"][0] == field
    assert "NUL" in caught.value.errors()[0]["msg"]


@pytest.mark.parametrize("value", ["a\ud800b", "\udfff", "x\udc80"])
def test_unpaired_surrogates_are_refused(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Model(text=value)
    assert "Unicode" in caught.value.errors()[0]["msg"]
    assert not is_storable(value)


def test_paired_surrogates_from_json_are_ordinary_text() -> None:
    assert Model.model_validate_json('{"text": "\\ud83d\\ude00"}').text == "\U0001f600"
    assert is_storable("\U0001f600")


def test_text_without_nul_passes_and_strict_text_refuses_numbers() -> None:
    assert Model(text="héllo \u2028", strict="x", items=["a"]).text == "héllo \u2028"
    with pytest.raises(ValidationError):
        Model(strict=1)
