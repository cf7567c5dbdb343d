"""The CLI's output layer: cleaning of printed strings, JSON escaping, colour rules, fitted and plain tables."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.cells import cell_len

from bookmark_client.models import Bookmark
from bookmark_client.ui import Column, Ui, clean, colour_allowed, fit_widths, json_text, text
from bookmark_client.views import BOOKMARK_COLUMNS, bookmark_rows

HOSTILE = [
    ("How to Make Perfect Pizza Dough\nA step-by-step", "How to Make Perfect Pizza Dough A step-by-step"),
    ("tab\there\r\nand\u2028there", "tab here and there"),
    ("\x1b[31mred\x1b[0m text", "red text"),
    ("\x9b31mred\x9b0m", "red"),  # 8-bit CSI
    ("\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "click"),  # OSC 8 hyperlink
    ("\x1b]0;new window title\x07after", "after"),
    ("bell\x07 nul\x00 del\x7f c1\x85end", "bell nul del c1 end"),
    ("abc\u202edcba\u202c xyz \u2066iso\u2069", "abcdcba xyz iso"),  # bidi override and isolate
    ("lone \ud800 surrogate", "lone ? surrogate"),
    ("family 👨\u200d👩\u200d👧 kept", "family 👨\u200d👩\u200d👧 kept"),
    ("heart ❤\ufe0f thumb 👍\U0001f3fd", "heart ❤ thumb 👍"),
    ("東京 🍕 café", "東京 🍕 café"),
]


@pytest.mark.parametrize(("raw", "shown"), HOSTILE)
def test_clean_leaves_one_line_of_visible_text(raw: str, shown: str) -> None:
    assert clean(raw) == shown


def test_json_escapes_controls_and_bidi_but_means_the_same() -> None:
    value = {"title": "a\u202eb\x85c\u2028d 東京 🍕", "n": 1}
    out = json_text(value)
    assert json.loads(out) == value
    assert not any(ch in out for ch in "\u202e\x85\u2028") and "東京 🍕" in out


@pytest.mark.parametrize(("env", "allowed"), [({}, True), ({"NO_COLOR": ""}, True), ({"NO_COLOR": "1"}, False)])
def test_no_color_means_present_and_not_empty(env: dict[str, str], allowed: bool) -> None:
    assert colour_allowed(env) is allowed


SGR = re.compile(r"\x1b\[([0-9;]*)m")


def colours(output: str) -> list[str]:
    """The colour settings among the SGR sequences (bold, dim and resets are not colours)."""
    return [
        p for m in SGR.finditer(output) for p in m.group(1).split(";") if re.fullmatch(r"3[0-8]|4[0-8]|9\d|10\d", p)
    ]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def bookmarks() -> list[Bookmark]:
    titles = {
        "pizza": "How to Make Perfect Pizza Dough\nA step-by-step guide to a chewy, airy crust",
        "jp": "東京の桜が満開に — 今年の見頃はいつまで？",
        "emoji": "🍕 Pizza night 🎉 with friends 👨\u200d👩\u200d👧",
        "evil": "\x1b[2J\x1b[31mRED\u202e txet",
    }
    return [
        Bookmark(
            client_bookmark_id=bookmark_id,
            url=f"https://{bookmark_id}.example/",
            domain=f"{bookmark_id}.example",
            title=title,
            user_tags=["cooking", "long read"],
            tags=["ai-one", "ai-two"],
            is_archived=bookmark_id == "jp",
        )
        for bookmark_id, title in titles.items()
    ]


def render(stream: io.StringIO, width: int, env: dict[str, str] | None = None) -> str:
    ui = Ui(stream, io.StringIO(), {"COLUMNS": str(width), "TERM": "xterm-256color", **(env or {})})
    ui.table(BOOKMARK_COLUMNS, bookmark_rows(bookmarks(), []))
    return stream.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_a_terminal_table_fits_and_aligns_wide_characters(width: int) -> None:
    lines = SGR.sub("", render(Tty(), width, {"NO_COLOR": "1"})).splitlines()
    assert len(lines) == 5 and [line.split()[0] for line in lines] == ["ID", "pizza", "jp", "emoji", "evil"]
    assert all(cell_len(line) <= width for line in lines)
    domains = [line.index(domain) for line, domain in zip(lines[1:], ["pizza.ex", "jp.ex", "emoji.ex", "evil.ex"])]
    assert len({cell_len(line[:at]) for line, at in zip(lines[1:], domains, strict=True)}) == 1  # one column
    assert "\x1b[2J" not in "".join(lines) and "\u202e" not in "".join(lines)


def test_a_narrow_terminal_drops_low_priority_columns_first() -> None:
    rows = bookmark_rows(bookmarks(), [])
    wide = fit_widths(BOOKMARK_COLUMNS, rows, 200)
    assert all(width is not None for width in wide)
    narrow = fit_widths(BOOKMARK_COLUMNS, rows, 80)
    shown = [c.header for c, w in zip(BOOKMARK_COLUMNS, narrow, strict=True) if w is not None]
    assert shown == ["ID", "TITLE", "DOMAIN", "STATE"]
    assert sum(w for w in narrow if w is not None) + 2 * (len(shown) - 1) <= 80
    tiny = fit_widths([Column("ID", 1), Column("T", 0, min_width=10, flexible=True), Column("X", 2)], rows, 10)
    assert tiny[2] is None and tiny[0] == 5  # "pizza", "emoji": the id column is never shortened


def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    assert "36" in colours(render(Tty(), 100)) and "36" in colours(render(Tty(), 100, {"NO_COLOR": ""}))
    no_colour = render(Tty(), 100, {"NO_COLOR": "yes"})
    assert colours(no_colour) == [] and "\x1b[1m" in no_colour  # bold headers are not colour
    assert "\x1b" not in render(io.StringIO(), 100)


def test_piped_output_does_not_depend_on_the_width() -> None:
    piped = render(io.StringIO(), 40)
    assert piped == render(io.StringIO(), 300)
    assert "How to Make Perfect Pizza Dough A step-by-step guide to a chewy, airy crust" in piped  # whole
    assert all(line == line.rstrip() for line in piped.splitlines())


def test_lines_are_cleaned_on_a_pipe_and_on_a_terminal() -> None:
    for stream in (io.StringIO(), Tty()):
        ui = Ui(stream, io.StringIO(), {"NO_COLOR": "1"})
        ui.line("changed x: ", ("bad\ntitle\x1b]0;pwned\x07!", "id"))
        assert stream.getvalue() == "changed x: bad title!\n"
    assert text("a\tb", ("c\x00", "id")).plain == "a bc"
