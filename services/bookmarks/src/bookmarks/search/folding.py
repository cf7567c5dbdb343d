"""Accent and case folding shared by the search index and the query (extensions.md §E3).

``fold(text)`` = NFKD, case fold, drop every combining mark (canonical combining class ≠ 0). It works
character by character (``fold(a + b) == fold(a) + fold(b)``), so offsets in folded text map back to the
original text (see :mod:`bookmarks.search.snippet`).

:func:`fold_function_sql` writes the same function for PostgreSQL without any extension (the embedded
server has no ``unaccent``): ``normalize(.., NFKD)``, ``translate`` plus two ``replace`` calls for the case
fold, and ``regexp_replace`` with the combining-mark ranges. The tables come from Python's
:mod:`unicodedata` when the function is generated; a migration should freeze the generated text.
"""

from __future__ import annotations

import sys
import unicodedata
from functools import cache
from typing import Final

FOLD_FUNCTION_NAME: Final = "search_fold"
# Ligatures and friends are decomposed by NFKD first; after it, only these case folds produce several chars.
_MULTI_CHAR_FOLDS: Final = {"ß": "ss", "ẞ": "ss"}


def _is_mark(char: str) -> bool:
    return unicodedata.combining(char) != 0


@cache
def _strip_marks_table() -> dict[int, None]:
    return {code: None for code in range(sys.maxunicode + 1) if _is_mark(chr(code))}


def fold(text: str) -> str:
    """The searchable form of ``text``: ``fold("Économiques STRAßE") == "economiques strasse"``."""
    return unicodedata.normalize("NFKD", text).casefold().translate(_strip_marks_table())


def _stable_chars() -> list[str]:
    """Characters that NFKD leaves alone: the only ones the SQL case fold ever sees."""
    chars = []
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        if unicodedata.normalize("NFKD", char) == char:
            chars.append(char)
    return chars


def _sql_escape(chars: str) -> str:
    """A PostgreSQL ``U&''`` literal body: every character as \\XXXX or \\+XXXXXX (ASCII-only SQL)."""
    return "".join(f"\\{ord(c):04X}" if ord(c) <= 0xFFFF else f"\\+{ord(c):06X}" for c in chars)


def _mark_ranges() -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for code in range(sys.maxunicode + 1):
        if not _is_mark(chr(code)):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return ranges


def _regex_char(code: int) -> str:
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


@cache
def fold_function_sql(name: str = FOLD_FUNCTION_NAME) -> str:
    """``CREATE OR REPLACE FUNCTION name(text)``: the IMMUTABLE SQL twin of :func:`fold` (UTF-8 database)."""
    if not name.isidentifier() or not name.isascii():
        raise ValueError(f"unsupported function name {name!r}")
    singles = [(c, c.casefold()) for c in _stable_chars() if c.casefold() != c and c not in _MULTI_CHAR_FOLDS]
    source = _sql_escape("".join(c for c, _ in singles))
    target = _sql_escape("".join(f for _, f in singles))
    folded = f"translate(normalize(t, NFKD), U&'{source}', U&'{target}')"
    for char, replacement in _MULTI_CHAR_FOLDS.items():
        folded = f"replace({folded}, U&'{_sql_escape(char)}', '{replacement}')"
    marks = "".join(_regex_char(a) if a == b else f"{_regex_char(a)}-{_regex_char(b)}" for a, b in _mark_ranges())
    return (
        f"CREATE OR REPLACE FUNCTION {name}(t text) RETURNS text\n"
        "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n"
        f"RETURN regexp_replace({folded}, '[{marks}]', '', 'g')"
    )
