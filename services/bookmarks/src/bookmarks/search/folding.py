"""Accent and case folding shared by the search index and the query (docs/api-guide.md, section 12).

``fold(text)`` = NFKD, case fold, drop every combining mark (canonical combining class ≠ 0). It works
character by character (``fold(a + b) == fold(a) + fold(b)``), so offsets in folded text map back to the
original text (see :mod:`bookmarks.search.snippet`).

:func:`fold_function_sql` writes the same function for PostgreSQL without any extension (the embedded
server has no ``unaccent``): a PL/pgSQL function of ``normalize(.., NFKD)``, ``lower(.. COLLATE "C")`` for
ASCII, ``translate`` per Unicode block for the other case folds, and ``regexp_replace`` of the combining
marks. Its tables come from Python's :mod:`unicodedata` at generation time, so a migration should freeze
the generated text. It costs milliseconds on a page of text: the write path folds in Python instead.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache
from typing import Final

FOLD_FUNCTION_NAME: Final = "search_fold"
# Ligatures and friends are decomposed by NFKD first; after it, only these case folds produce several chars.
_MULTI_CHAR_FOLDS: Final = {"ß": "ss", "ẞ": "ss"}
_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]+")


def _is_mark(char: str) -> bool:
    return unicodedata.combining(char) != 0


@cache
def _strip_marks_table() -> dict[int, None]:
    return {code: None for code in range(sys.maxunicode + 1) if _is_mark(chr(code))}


def _strip_marks(match: re.Match[str]) -> str:
    return match.group().translate(_strip_marks_table())


def fold(text: str) -> str:
    """The searchable form of ``text``: ``fold("Économiques STRAßE") == "economiques strasse"``."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    # Marks are never ASCII: only the non-ASCII runs go through the (per-character, slow) translate.
    return folded if folded.isascii() else _NON_ASCII.sub(_strip_marks, folded)


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


def _translate_groups() -> list[tuple[str, str, tuple[int, int]]]:
    """Non-ASCII single-char case folds grouped by 256-code-point block: (from, to, guard range)."""
    groups: dict[int, list[tuple[str, str]]] = {}
    for char in _stable_chars():
        folded = char.casefold()
        if folded != char and char not in _MULTI_CHAR_FOLDS and not char.isascii():
            groups.setdefault(ord(char) >> 8, []).append((char, folded))
    return [
        ("".join(c for c, _ in pairs), "".join(f for _, f in pairs), (ord(pairs[0][0]), ord(pairs[-1][0])))
        for _, pairs in sorted(groups.items())
    ]


def _regex_range(first: int, last: int) -> str:
    return _regex_char(first) if first == last else f"{_regex_char(first)}-{_regex_char(last)}"


@cache
def fold_function_sql(name: str = FOLD_FUNCTION_NAME) -> str:
    """``CREATE OR REPLACE FUNCTION name(text)``: the IMMUTABLE twin of :func:`fold` (UTF-8 database).

    ASCII letters fold with ``lower(.. COLLATE "C")``; each other block's case folds run through
    ``translate`` only when the text has a character of that block (``translate`` costs text length ×
    table length: one table for all of Unicode took 75 ms on 5 KB).
    """
    if not name.isidentifier() or not name.isascii():
        raise ValueError(f"unsupported function name {name!r}")
    lines = [
        f"CREATE OR REPLACE FUNCTION {name}(t text) RETURNS text",
        "LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fold$",
        'DECLARE s text := lower(normalize(t, NFKD) COLLATE "C");',
        "BEGIN",
    ]
    for source, target, (first, last) in _translate_groups():
        lines.append(
            f"  IF s ~ '[{_regex_range(first, last)}]' THEN"
            f" s := translate(s, U&'{_sql_escape(source)}', U&'{_sql_escape(target)}'); END IF;"
        )
    for char, replacement in _MULTI_CHAR_FOLDS.items():
        lines.append(f"  s := replace(s, U&'{_sql_escape(char)}', '{replacement}');")
    marks = "".join(_regex_range(first, last) for first, last in _mark_ranges())
    lines += [f"  RETURN regexp_replace(s, '[{marks}]', '', 'g');", "END", "$fold$"]
    return "\n".join(lines)
