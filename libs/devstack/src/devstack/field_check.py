"""``make field-check``: adding a bookmark field is one edit of its declaration plus generated files.

On a copy of the repository (the tracked files and the working changes, in a scratch directory), four
throw-away fields of different kinds are added to ``bookmarks.domain.model.Bookmark``, each by one edit
of that file (the field's attribute; a type the module does not import yet, and an enum, are declared
there too), and nothing else is written by hand:

- ``word_count: int | None``, client-written;
- ``published_on: date | None``, written by the server;
- ``reading_mood: ReadingMood`` (an ``enum.StrEnum``), client-written, NOT NULL with a default;
- ``topics: tuple[str, ...]`` (``list[str]`` on the wire), written by the server.

Then the generators run (``make migration``, ``make wire-document-migration``, ``make client-model``,
``make openapi``), ruff must pass over the copy, and so must the bookmarks service's whole test suite
(unit and integration, on a real PostgreSQL), the reference client's unit tests and ``tests/docs``
(the OpenAPI drift test among them). The copy runs with this checkout's ``.venv``; ``PYTHONPATH`` puts
the copy's packages before the editable installs, so everything imported is the copy's. Exit status:
the first failing step's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

GIT = shutil.which("git") or "git"
MAKE = shutil.which("make") or "make"
ROOT = Path(__file__).resolve().parents[4]
MODEL = Path("services/bookmarks/src/bookmarks/domain/model.py")
RECORD = "@dataclass(frozen=True, slots=True)\nclass Bookmark:"
ANCHOR = "    deleted_at: datetime | None = "  # new fields go before the tombstone mark, the record's last field


@dataclass(frozen=True)
class FieldEdit:
    """One field's edit of the declaration: its attribute line, and what its type needs at module level."""

    attribute: str
    module_code: str = ""  # e.g. an enum class, inserted before the record
    datetime_names: tuple[str, ...] = ()  # names the ``from datetime import`` line must also bring


EDITS = (
    FieldEdit("    word_count: int | None = _client(None)\n"),
    FieldEdit("    published_on: date | None = None\n", datetime_names=("date",)),
    FieldEdit(
        "    reading_mood: ReadingMood = _client(ReadingMood.CALM)\n",
        module_code='class ReadingMood(enum.StrEnum):\n    CALM = "calm"\n    BUSY = "busy"\n\n\n',
    ),
    FieldEdit("    topics: tuple[str, ...] = ()\n"),
)
MAKE_STEPS: tuple[tuple[str, ...], ...] = (
    ("migration", "SERVICE=bookmarks", "MSG=add the field check's fields"),
    ("wire-document-migration",),
    ("client-model",),
    ("openapi",),
)
TEST_PATHS = ("services/bookmarks/tests", "libs/client/tests/unit", "tests/docs")


def tracked_files(root: Path) -> list[str]:
    """The checkout's files as git sees them: tracked (with working changes) and new ones not ignored."""
    out = subprocess.run(  # noqa: S603 - fixed arguments
        [GIT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout
    return sorted({name for name in out.decode().split("\0") if name and (root / name).is_file()})


def copy_repository(root: Path, target: Path) -> None:
    for name in tracked_files(root):
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, destination)
    (target / ".venv").symlink_to(root / ".venv")


def apply(source: str, edit: FieldEdit) -> str:
    """``model.py`` with one more field (and what its type needs)."""
    if ANCHOR not in source:
        raise ValueError(f"{MODEL}: no line starting {ANCHOR.strip()!r} to add fields before")
    source = source.replace(ANCHOR, edit.attribute + ANCHOR, 1)
    if edit.module_code:
        source = source.replace(RECORD, edit.module_code + RECORD, 1)
        source = source.replace("import dataclasses\n", "import dataclasses\nimport enum\n", 1)
    for name in edit.datetime_names:
        source = re.sub(
            r"^from datetime import (.*)$", rf"from datetime import {name}, \1", source, count=1, flags=re.M
        )
    return source


def _run(step: str, command: Sequence[str], cwd: Path, env: dict[str, str]) -> None:
    started = time.monotonic()
    print(f"field-check: {step}", flush=True)
    completed = subprocess.run(list(command), cwd=cwd, env=env, check=False)  # noqa: S603 - our own steps
    print(f"field-check: {step}: {time.monotonic() - started:.0f} s", flush=True)
    if completed.returncode != 0:
        raise SystemExit(completed.returncode)


def check(copy: Path, pytest_args: Sequence[str]) -> None:
    model = copy / MODEL
    source = model.read_text(encoding="utf-8")
    for edit in EDITS:
        source = apply(source, edit)
    model.write_text(source, encoding="utf-8")
    paths = [str(p) for p in sorted(copy.glob("libs/*/src")) + sorted(copy.glob("services/*/src"))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    # UV=/bin/true: the copy shares this checkout's .venv, which `make venv` must not re-sync to the copy.
    for target in MAKE_STEPS:
        _run(f"make {target[0]}", [MAKE, "--no-print-directory", *target, "UV=/bin/true"], copy, env)
    # What the generators wrote is formatted and lint-clean like the code written by hand.
    ruff = str(copy / ".venv/bin/ruff")
    _run("ruff check", [ruff, "check", "--quiet", "--no-cache", "."], copy, env)
    _run("ruff format --check", [ruff, "format", "--check", "--quiet", "--no-cache", "."], copy, env)
    # A repository of its own: tests/docs lists the files git tracks (the generated ones included).
    for git in (["init", "--quiet"], ["add", "--all"]):
        _run(f"git {git[0]}", [GIT, *git], copy, env)
    _run(
        "tests",
        [str(copy / ".venv/bin/pytest"), "-q", "-p", "no:cacheprovider", *pytest_args, *TEST_PATHS],
        copy,
        env,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make field-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy (its path is printed)")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest")
    args = parser.parse_args(argv)
    started = time.monotonic()
    copy = Path(tempfile.mkdtemp(prefix="field-check-"))
    try:
        copy_repository(ROOT, copy)
        check(copy, args.pytest_args)
    finally:
        if args.keep:
            print(f"field-check: the copy stays in {copy}")
        else:
            shutil.rmtree(copy, ignore_errors=True)
    print(f"field-check: passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
