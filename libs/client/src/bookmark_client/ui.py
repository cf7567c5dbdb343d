"""The output layer of the ``bookmarks`` command: every line it prints goes through a :class:`Ui`.

- On a terminal, output is rendered by rich: colour (unless ``NO_COLOR`` is set to a non-empty value,
  https://no-color.org), tables fitted to the terminal's width, progress bars on stderr.
- On a pipe or a file, output is plain text written as is: no colour, no progress, no truncation that
  depends on a width, so the same data always gives the same bytes.
- Every string goes through :func:`clean` before it is printed: a title, a tag or an error message from the
  server is one line of visible text, whatever control characters or escape sequences it holds.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from rich import filesize
from rich.cells import cell_len
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text
from rich.theme import Theme

__all__ = ["Bar", "Column", "Ui", "clean", "colour_allowed", "fit_widths", "json_text", "plain_table"]

# Escape sequences as a whole (CSI, and OSC/DCS/APC strings up to their terminator), 7-bit and 8-bit forms:
# removing only the ESC would leave "[31m" on screen.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# Characters that end or split a line; each run becomes one space so the words stay apart.
_BREAKS = re.compile(r"[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]+")
# Other C0/C1 controls, DEL, and the bidirectional embeddings, overrides and isolates (a title must not
# reverse the columns printed after it). Zero-width joiners stay: emoji sequences need them.
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Emoji presentation selectors and skin-tone modifiers: terminals disagree on the width they give them (tmux
# draws a red heart with VS16 one cell wide, rich counts two), which would shift every column after them.
_AMBIGUOUS_EMOJI = re.compile(r"[\ufe0e\ufe0f\U0001f3fb-\U0001f3ff]")
# In JSON output the same characters are written as \\u escapes (the document means the same).
_JSON_RISKY = re.compile(r"[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")

GAP = 2  # spaces between table columns

THEME = Theme(
    {
        "head": "bold",
        "id": "cyan",
        "muted": "dim",
        "ok": "green",
        "warn": "yellow",
        "bad": "red",
        "mark": "bold yellow",
        "link": "blue",
        "tag": "magenta",
        "error": "bold red",
    }
)


def clean(text: str) -> str:
    """``text`` as one line of printable characters: escape sequences and controls removed, line breaks and
    tabs turned into spaces, bidi controls and emoji modifiers of uncertain width dropped, unpaired
    surrogates replaced."""
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _AMBIGUOUS_EMOJI.sub("", _INVISIBLE.sub("", _BREAKS.sub(" ", text)))
    return text.encode("utf-8", "replace").decode("utf-8")


def json_text(value: Any) -> str:
    """Indented JSON, non-ASCII text as is, but with controls, bidi and line separators escaped."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return _JSON_RISKY.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def colour_allowed(environ: Mapping[str, str]) -> bool:
    """https://no-color.org: ``NO_COLOR`` present and not empty turns colour off."""
    return environ.get("NO_COLOR", "") == ""


def _is_terminal(stream: TextIO, environ: Mapping[str, str]) -> bool:
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and environ.get("TERM") != "dumb"


Part = str | tuple[str, str]


def text(*parts: Part) -> Text:
    """One line from parts (a string, or a (string, style) pair), each part cleaned."""
    line = Text()
    for part in parts:
        if isinstance(part, str):
            line.append(clean(part))
        else:
            line.append(clean(part[0]), style=part[1])
    return line


@dataclass(frozen=True)
class Column:
    """A table column: lower ``priority`` is dropped later on a narrow terminal; widths are in terminal cells.

    The ``flexible`` column takes the width the others leave, between ``min_width`` and its data's width;
    the others are as wide as their data, up to ``max_width``."""

    header: str
    priority: int
    min_width: int = 0
    max_width: int = 1_000_000
    flexible: bool = False


class Ui:
    """stdout for results, stderr for progress, notes and errors."""

    def __init__(self, stdout: TextIO, stderr: TextIO, environ: Mapping[str, str] | None = None) -> None:
        env = dict(os.environ if environ is None else environ)
        self._stdout, self._stderr = stdout, stderr
        self.out_tty = _is_terminal(stdout, env)
        self.err_tty = _is_terminal(stderr, env)
        self.out = _console(stdout, self.out_tty, env)
        self.err = _console(stderr, self.err_tty, env)
        self._live: Progress | None = None

    @property
    def width(self) -> int:
        return self.out.width

    def line(self, *parts: Part) -> None:
        self._emit(text(*parts), to_err=False)

    def note(self, *parts: Part) -> None:
        """A line on stderr (beside a result that goes to stdout)."""
        self._emit(text(*parts), to_err=True)

    def error(self, message: str) -> None:
        self._emit(text("bookmarks: ", ("error:", "error"), " ", message), to_err=True)

    def json(self, value: Any) -> None:
        self._stdout.write(json_text(value) + "\n")
        self._stdout.flush()

    def rich_line(self, line: Text) -> None:
        """A line built by the caller from :func:`text` parts."""
        self._emit(line, to_err=False)

    def _emit(self, line: Text, *, to_err: bool) -> None:
        console, tty, stream = (
            (self.err, self.err_tty, self._stderr) if to_err else (self.out, self.out_tty, self._stdout)
        )
        if tty and self._live is not None and self.err_tty:
            # Both streams are the terminal the bars are drawn on: print above the bars, not through them.
            console = self._live.console
        if tty:
            console.print(line, soft_wrap=_has_long_word(line.plain, console.width))
        else:
            stream.write(line.plain + "\n")
            stream.flush()

    def table(self, columns: Sequence[Column], rows: Sequence[Sequence[Text]]) -> None:
        """Rows under a header: fitted to the terminal, or at the data's own width on a pipe."""
        if not self.out_tty:
            for plain in plain_table([c.header for c in columns], [[cell.plain for cell in r] for r in rows]):
                self._stdout.write(plain + "\n")
            self._stdout.flush()
            return
        widths = fit_widths(columns, rows, self.out.width)
        table = Table(box=None, padding=(0, GAP // 2), pad_edge=False, show_edge=False, header_style="head")
        for column, width in zip(columns, widths, strict=True):
            if width is not None:
                table.add_column(column.header, width=width, no_wrap=True, overflow="ellipsis")
        for row in rows:
            table.add_row(*(cell for cell, width in zip(row, widths, strict=True) if width is not None))
        self.out.print(table)

    @contextmanager
    def status(self, message: str) -> Iterator[None]:
        """A spinner with ``message`` on stderr while the block runs (a terminal only; gone afterwards)."""
        if not self.err_tty:
            yield
            return
        with self.err.status(message):
            yield

    @contextmanager
    def progress(self, *, show: bool = True) -> Iterator[Progress]:
        """Progress bars on stderr; on a pipe (or without ``show``) a progress that draws nothing."""
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=max(10, min(40, self.err.width - 50))),
            AmountColumn(units=self.err.width >= 80),  # a narrow terminal: the numbers without their nouns
            RateColumn(units=self.err.width >= 80),
            TimeRemainingColumn(compact=True, elapsed_when_finished=True),
            console=self.err,
            disable=not (show and self.err_tty),
            redirect_stdout=False,
            redirect_stderr=False,
        )
        with progress:
            self._live = None if progress.disable else progress
            try:
                yield progress
            finally:
                self._live = None


def _has_long_word(line: str, width: int) -> bool:
    """A word (say a URL) wider than the terminal: rich would fold it with line breaks a copy would keep,
    so the terminal wraps that line itself; any other line is wrapped between words."""
    return any(cell_len(word) > width for word in line.split())


def _console(stream: TextIO, tty: bool, environ: dict[str, str]) -> Console:
    return Console(
        file=stream,
        force_terminal=tty,
        force_interactive=tty,
        no_color=not colour_allowed(environ),
        color_system="auto" if tty else None,
        highlight=False,
        markup=False,
        emoji=False,
        theme=THEME,
        _environ=environ,
    )


class Bar:
    """One task of a :class:`Progress`, in the units it counts (``bytes`` or a noun like ``items``)."""

    def __init__(self, progress: Progress, description: str, unit: str, total: float | None = None) -> None:
        self._progress = progress
        self.task: TaskID = progress.add_task(description, total=total, unit=unit)
        self.completed: float = 0
        self.total = total

    def update(self, completed: float, total: float | None = None) -> None:
        self.completed = completed
        self.total = self.total if total is None else total
        self._progress.update(self.task, completed=completed, total=self.total)

    def finish(self, completed: float | None = None) -> None:
        """Done: the bar ends full (at ``completed``, else at its total or its count)."""
        if completed is None:
            completed = self.total if self.total is not None else self.completed
        self.update(completed, completed)


class AmountColumn(ProgressColumn):
    """``3.2/10.0 MB`` for bytes, ``120/300 items`` for a count (``120 items`` while the total is unknown)."""

    def __init__(self, *, units: bool = True) -> None:
        super().__init__()
        self.units = units

    def render(self, task: Task) -> Text:
        unit = str(task.fields.get("unit", ""))
        if unit == "bytes":
            done = filesize.decimal(int(task.completed))
            total = f"/{filesize.decimal(int(task.total))}" if task.total is not None else ""
            return Text(done + total, style="progress.download")
        total = f"/{int(task.total)}" if task.total is not None else ""
        noun = f" {unit}" if self.units else ""
        return Text(f"{int(task.completed)}{total}{noun}", style="progress.download")


class RateColumn(ProgressColumn):
    """Throughput over rich's moving window: ``1.2 MB/s`` or ``85 items/s``."""

    def __init__(self, *, units: bool = True) -> None:
        super().__init__()
        self.units = units

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if task.finished and task.finished_time:  # a short task has too few samples for rich's estimate
            speed = task.completed / task.finished_time
        unit = str(task.fields.get("unit", ""))
        if speed is None:
            return Text("", style="progress.data.speed")
        if unit == "bytes":
            return Text(f"{filesize.decimal(int(speed))}/s", style="progress.data.speed")
        noun = f" {unit}" if self.units else ""
        return Text(f"{speed:,.0f}{noun}/s", style="progress.data.speed")


def fit_widths(columns: Sequence[Column], rows: Sequence[Sequence[Text]], width: int) -> list[int | None]:
    """Each column's width in cells, or None for a column dropped to fit ``width``.

    Columns are dropped lowest priority first until the others, at their data's width, leave the flexible
    column its minimum (the two of highest priority always stay); the flexible column gets the rest.
    """
    natural = [
        max([cell_len(column.header), *(cell_len(row[i].plain) for row in rows)]) for i, column in enumerate(columns)
    ]
    wanted = [n if c.flexible else min(n, c.max_width) for n, c in zip(natural, columns, strict=True)]
    least = [min(n, c.min_width) if c.flexible else w for n, w, c in zip(natural, wanted, columns, strict=True)]
    keep = sorted(range(len(columns)), key=lambda i: columns[i].priority)

    def needed(kept: list[int]) -> int:
        return sum(least[i] for i in kept) + GAP * (len(kept) - 1)

    while len(keep) > 2 and needed(keep) > width:
        keep.pop()
    widths = {i: least[i] for i in keep}
    for i in keep:
        if columns[i].flexible:
            widths[i] = max(least[i], min(wanted[i], width - needed(keep) + least[i]))
    return [widths.get(i) for i in range(len(columns))]


def plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns at the data's own width (measured in terminal cells), no trailing spaces."""
    widths = [max([cell_len(h), *(cell_len(r[i]) for r in rows)]) for i, h in enumerate(header)]

    def pad(value: str, width: int) -> str:
        return value + " " * (width - cell_len(value))

    return [
        (" " * GAP).join(pad(cell, w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]
    ]
