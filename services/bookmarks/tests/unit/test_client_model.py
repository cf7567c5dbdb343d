"""``make client-model``: the reference client's Bookmark fields are the server's declaration."""

from __future__ import annotations

import dataclasses
import enum

import pytest

from bookmarks import client_model
from bookmarks.domain.fields import FieldSpec, FieldType, Writable
from bookmarks.domain.model import BOOKMARK_FIELDS


def test_the_client_model_is_generated_from_the_current_declaration() -> None:
    current = client_model.MODELS.read_text(encoding="utf-8")
    assert client_model.render(current) == current, (
        "libs/client/src/bookmark_client/models.py no longer follows bookmarks.domain.model.Bookmark: "
        "run `make client-model`"
    )


class Mood(enum.StrEnum):
    CALM = "calm"
    BUSY = "busy"


def _declared(name: str, field_type: FieldType, default: object, client: Writable | None) -> object:
    return dataclasses.replace(BOOKMARK_FIELDS[0], name=name, type=field_type, default=default, spec=FieldSpec(client))


@pytest.mark.parametrize(
    ("declared", "line"),
    [
        (
            _declared("n", FieldType("int", nullable=True), None, Writable()),
            "n: Annotated[int | None, f.Writable(f.integer)] = None",
        ),
        (
            _declared("d", FieldType("date", nullable=True), None, Writable()),
            "d: Annotated[str | None, f.Writable(f.date)] = None",
        ),
        (
            _declared("m", FieldType("enum", enum=Mood), Mood.CALM, Writable()),
            'm: Annotated[str, f.Writable(f.one_of(("calm", "busy")))] = "calm"',
        ),
        (_declared("s", FieldType("strings"), (), None), "s: list[str] = []"),
        (_declared("k", FieldType("int"), 0, None), "k: int = 0"),
        (_declared("u", FieldType("text"), dataclasses.MISSING, None), "u: str | None = None"),
    ],
)
def test_each_kind_has_a_client_attribute(declared: object, line: str) -> None:
    assert client_model.field_line(declared).strip() == line  # type: ignore[arg-type]


def test_a_client_written_decimal_needs_a_declared_check() -> None:
    with pytest.raises(ValueError, match="declare the client's check"):
        client_model.field_line(_declared("x", FieldType("decimal", nullable=True), None, Writable()))  # type: ignore[arg-type]
