"""A streaming reader for a JSON document made of big arrays of small values.

The document is never held whole: only the value being decoded (at most ``max_value_chars``) and one
chunk are in memory. Each value is decoded by the standard library's ``raw_decode``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Final

from bookmarks.imports.formats.model import ImportFormatError

__all__ = ["MAX_VALUE_CHARS", "JsonStream"]

MAX_VALUE_CHARS: Final = 1024 * 1024
_NON_WS: Final = re.compile(r"[^ \t\r\n]")
# What a value cut by the end of the buffer can leave after the decoder's error position: the start of a
# literal, a sign, a fraction or exponent whose digits are in the next chunk.
_LITERALS: Final = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_TAIL: Final = re.compile(r"\.|[eE][-+]?")


class JsonStream:
    def __init__(self, chunks: Iterable[str], max_value_chars: int = MAX_VALUE_CHARS) -> None:
        self._chunks = iter(chunks)
        self._max = max_value_chars
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._line = 1  # line number at self._counted
        self._counted = 0
        self._decoder = json.JSONDecoder()

    @property
    def line(self) -> int:
        """1-based line of the current position."""
        self._line += self._buf.count("\n", self._counted, self._pos)
        self._counted = self._pos
        return self._line

    def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = next(self._chunks, None)
        if chunk is None:
            self._eof = True
            return False
        self._line += self._buf.count("\n", self._counted, self._pos)
        self._buf = self._buf[self._pos :] + chunk
        self._pos = self._counted = 0
        return True

    def peek(self) -> str:
        """The next non-whitespace character, not consumed; ``""`` at the end of the document."""
        while True:
            found = _NON_WS.search(self._buf, self._pos)
            if found is not None:
                self._pos = found.start()
                return self._buf[self._pos]
            self._pos = len(self._buf)
            if not self._fill():
                return ""

    def expect(self, char: str) -> None:
        found = self.peek()
        if found != char:
            shown = repr(found) if found else "the end of the file"
            raise ImportFormatError(f"Invalid JSON at line {self.line}: expected {char!r}, found {shown}.")
        self._pos += 1

    def value(self) -> object:
        """Decode and consume the next JSON value."""
        self.peek()
        while True:
            try:
                obj, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                self._need_more(exc)
                continue
            except RecursionError:
                raise ImportFormatError(f"The JSON value at line {self.line} is nested too deeply.") from None
            except ValueError as exc:  # e.g. an integer of more than 4,300 digits
                raise ImportFormatError(f"Invalid JSON at line {self.line}: {str(exc)[:200]}.") from None
            if end == len(self._buf) and not self._eof and self._fill():
                continue  # a number or literal may go on in the next chunk
            self._pos = end
            return obj

    def _need_more(self, exc: json.JSONDecodeError) -> None:
        """Read the next chunk when the value may only be cut by the end of the buffer; else refuse."""
        if not self._cut_by_the_end(exc):
            raise ImportFormatError(f"Invalid JSON at line {self._line_of(exc.pos)}: {exc.msg}.")
        if len(self._buf) - self._pos > self._max:
            raise ImportFormatError(f"The JSON value at line {self.line} is longer than {self._max:,} characters.")
        if not self._fill():
            raise ImportFormatError(f"Invalid JSON at line {self.line}: {exc.msg}.")

    def _cut_by_the_end(self, exc: json.JSONDecodeError) -> bool:
        """Whether more text could complete what the decoder stopped at: an error at the end of the buffer,
        a string it reached the end inside, or a literal or number whose rest is in the next chunk."""
        if exc.msg.startswith("Unterminated string"):
            return True  # raised only when the string runs to the end of the buffer
        rest = self._buf[exc.pos :].lstrip(" \t\r\n")
        if exc.msg.startswith("Invalid \\uXXXX escape"):
            return len(rest) <= 5  # "u" and fewer than four hex digits before the end
        if not rest:
            return True
        if any(word.startswith(rest) and word != rest for word in _LITERALS):
            return True
        return _NUMBER_TAIL.fullmatch(rest) is not None

    def _line_of(self, pos: int) -> int:
        """1-based line of ``pos``, at or after the current position."""
        return self.line + self._buf.count("\n", self._pos, pos)

    def skip_comma_or(self, closing: str) -> bool:
        """Consume ``,`` (True: another element follows) or ``closing`` (False)."""
        found = self.peek()
        if found == ",":
            self._pos += 1
            return True
        if found == closing:
            self._pos += 1
            return False
        shown = repr(found) if found else "the end of the file"
        raise ImportFormatError(f"Invalid JSON at line {self.line}: expected ',' or {closing!r}, found {shown}.")

    def iter_array(self) -> Iterator[tuple[int, object]]:
        """(line where it starts, value) for each element of the array that comes next."""
        self.expect("[")
        if self.peek() == "]":
            self._pos += 1
            return
        while True:
            self.peek()
            yield self.line, self.value()
            if not self.skip_comma_or("]"):
                return

    def iter_keys(self) -> Iterator[str]:
        """Keys of the object that comes next; the caller consumes each key's value before the next."""
        self.expect("{")
        if self.peek() == "}":
            self._pos += 1
            return
        while True:
            if self.peek() != '"':
                raise ImportFormatError(f"Invalid JSON at line {self.line}: expected a key.")
            key = self.value()
            assert isinstance(key, str)
            self.expect(":")
            yield key
            if not self.skip_comma_or("}"):
                return
