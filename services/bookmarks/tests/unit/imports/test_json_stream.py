"""The streaming JSON reader tells a syntax error from a value cut by a chunk boundary: a syntax error is
reported as one, at once, without reading further; a value cut anywhere (strings, escapes, numbers,
literals, between tokens) is completed from the next chunk."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from bookmarks.imports.formats.jsonstream import JsonStream
from bookmarks.imports.formats.model import ImportFormatError


class CountingChunks:
    """An endless-looking source: ``first``, then 1 MiB chunks of padding; counts what was read."""

    def __init__(self, first: str, extra_chunks: int = 4) -> None:
        self.first = first
        self.extra_chunks = extra_chunks
        self.read = 0

    def __iter__(self) -> Iterator[str]:
        self.read += 1
        yield self.first
        for _ in range(self.extra_chunks):
            self.read += 1
            yield " " * (1024 * 1024)


@pytest.mark.parametrize(
    "document",
    [
        '[{"url": "https://a.example/"} {"url": "https://b.example/"}]',  # missing comma
        '[{"url": "https://a.example/", "title": tru}]',  # a bad literal
        '[{"url": "https://a.example/" "title": "x"}]',  # missing comma between members
        '[{"url": "https://a.example/", title: "x"}]',  # an unquoted key
        '[{"url": "https://a.example/", "title": "a\\qb"}]',  # an invalid escape
        '[{"url": "https://a.example/", "n": 1.x}]',  # a broken number
        '[{"url": "https://a.example/"}, ]',  # a trailing comma
    ],
)
def test_a_syntax_error_is_reported_as_one_at_once(document: str) -> None:
    chunks = CountingChunks(document)
    stream = JsonStream(chunks)
    with pytest.raises(ImportFormatError) as caught:
        list(stream.iter_array())
    message = str(caught.value)
    assert message.startswith("Invalid JSON at line 1"), message
    assert "longer than" not in message
    assert chunks.read == 1, "it read past the chunk holding the error"


def test_a_syntax_error_deep_in_a_file_names_its_line() -> None:
    lines = [f'{{"url": "https://a.example/{n}"}},' for n in range(50)]
    document = "[\n" + "\n".join(lines) + '\n{"url": "https://b.example/" "x": 1}\n]'
    with pytest.raises(ImportFormatError, match="Invalid JSON at line 52"):
        list(JsonStream(CountingChunks(document)).iter_array())


VALUES = [
    {"url": 'https://a.example/é\\"x\u2028', "tags": ["a", "b"], "n": -12.5e-3, "ok": True, "none": None},
    {"s": "\\u00e9 é 😀", "big": 12345678901234567890, "f": False, "z": 0, "e": 1e2, "m": -0.5},
]


@pytest.mark.parametrize("ascii_only", [False, True])  # True: every non-ASCII character as a \\u escape
@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_values_cut_at_every_chunk_boundary_are_read_whole(size: int, ascii_only: bool) -> None:
    document = json.dumps(VALUES, ensure_ascii=ascii_only, indent=1) + "\n"
    chunks = [document[i : i + size] for i in range(0, len(document), size)]
    assert [value for _line, value in JsonStream(chunks).iter_array()] == VALUES


@pytest.mark.parametrize("cut", ['[{"a": "abc', '[{"a": "\\u00', '[{"a": tr', '[{"a": 1.', '[{"a": 1e-', '[{"a": -'])
def test_a_value_cut_by_the_end_of_the_file_is_invalid(cut: str) -> None:
    with pytest.raises(ImportFormatError, match="Invalid JSON at line 1"):
        list(JsonStream(iter([cut])).iter_array())


def test_a_value_longer_than_the_limit_is_still_refused_as_such() -> None:
    document = '[{"title": "' + "x" * 5000 + '"}]'
    chunks = [document[i : i + 100] for i in range(0, len(document), 100)]
    with pytest.raises(ImportFormatError, match="longer than 1,000 characters"):
        list(JsonStream(chunks, max_value_chars=1000).iter_array())
