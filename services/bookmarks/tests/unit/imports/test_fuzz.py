"""Mutated real exports in every format: only items or ImportFormatError, never another exception."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bookmarks.imports.formats import FORMATS, ImportFormatError, iter_items

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = [path.read_bytes() for path in sorted(FIXTURES.iterdir())]


def omnivore_sample() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "metadata_0_to_1.json", json.dumps([{"url": "https://a.example/", "labels": ["x"], "state": "Archived"}])
        )
        archive.writestr("content/a.html", "<p>")
    return buffer.getvalue()


SAMPLES.append(omnivore_sample())


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        at = draw(st.integers(min_value=0, max_value=max(0, len(data) - 1)))
        action = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if action == "flip" and data:
            data[at] = draw(st.integers(min_value=0, max_value=255))
        elif action == "insert":
            data[at:at] = draw(
                st.sampled_from(
                    [
                        b"<",
                        b">",
                        b'"',
                        b",",
                        b"\n",
                        b"\r",
                        b"\x00",
                        b"&#",
                        b"[",
                        b"{",
                        b"<DL>",
                        b"</DL>",
                        b"<H3>",
                        b"\xff\xfe",
                        b"PK",
                    ]
                )
            )
        elif action == "delete":
            del data[at : at + draw(st.integers(min_value=1, max_value=40))]
        else:
            del data[at:]
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(), fmt=st.sampled_from(["auto", *FORMATS]))
def test_mutated_exports_yield_items_or_a_clear_error(data: bytes, fmt: str) -> None:
    try:
        for item in iter_items(io.BytesIO(data), fmt):
            assert item.valid == (item.reason is None)
            assert item.line >= 0
    except ImportFormatError as exc:
        assert str(exc)
