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
``make openapi``), ruff must pass over the copy, and so must the tests a new field can affect, listed in
:data:`SELECTION` (``make test`` runs every test on the unchanged checkout anyway). They are the tests of
the declaration and of everything derived from it, in these groups:

- the declaration: ``domain/fields.py`` resolving each kind, the record's rules (defaults, merge of a
  write, ``to_row``/``from_row``) and the table's columns matching the record's attributes;
- the wire: the resource and PUT models, the Python and the SQL rendering of the document, and the
  trigger SQL frozen in the latest migration (fails when ``make wire-document-migration`` did not run);
- exports and imports: the CSV columns and cells per kind, the JSON writer, the import rules that build
  records from a file;
- generated files: the reference client's model against the declaration (fails when ``make
  client-model`` did not run), the client's unit tests on that model, the committed OpenAPI document
  (fails when ``make openapi`` did not run), and the comment rules every committed file follows;
- the database (integration, on a real PostgreSQL): migrations against the models (fails when ``make
  migration`` did not run) and upgrades with data; create, PUT merge, retry and tombstones through the
  API and the write fast path; the write statements; delta documents rendered by PostgreSQL against the
  Python rendering with every field set; lookup, search and anti-entropy re-publishing reading whole
  rows; JSON and CSV exports and the export-import round trip; an import landing in delta.

Left out: tests of one named field's behaviour (search ranking, tags, collections), of concurrency, of
the broker and of crash recovery: a new field takes none of their paths. Every entry of the selection
must name an existing file and, after ``::``, a test function defined in it; a renamed or removed test
stops the check before anything runs (the devstack unit tests check the same on every ``make test``).

The copy runs with this checkout's ``.venv``; ``PYTHONPATH`` puts the copy's packages before the
editable installs, so everything imported is the copy's. Exit status: the first failing step's.
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
_UNIT = "services/bookmarks/tests/unit"
_INTEGRATION = "services/bookmarks/tests/integration"


@dataclass(frozen=True)
class Selected:
    """Tests of one layer the declaration feeds. ``tests``: directories, files or ``file::test_function``."""

    why: str
    tests: tuple[str, ...]


SELECTION = (
    Selected(
        "the declaration: kinds, record rules, to_row/from_row, the table's columns",
        (f"{_UNIT}/test_fields.py", f"{_UNIT}/test_bookmark_rules.py", f"{_UNIT}/test_tables.py"),
    ),
    Selected(
        "the wire and PUT models, the document's Python and SQL rendering, the migrated trigger",
        (f"{_UNIT}/test_wire.py",),
    ),
    Selected(
        "CSV and JSON export writers, records built by imports",
        (f"{_UNIT}/exports/test_writers.py", f"{_UNIT}/imports/test_import_rules.py"),
    ),
    Selected(
        "generated files: the client's model and its users, OpenAPI, comment rules",
        (
            f"{_UNIT}/test_client_model.py",
            "libs/client/tests/unit",
            "tests/docs/test_api_contract_docs.py",
            "tests/docs/test_comment_hygiene.py",
        ),
    ),
    Selected(
        "migrations against the models, upgrades with data, the generators", (f"{_INTEGRATION}/test_migrations.py",)
    ),
    Selected(
        "the resource through the API: create, PUT merge, retries, tombstones, the fast path, the statements",
        (
            f"{_INTEGRATION}/test_bookmarks_api.py",
            f"{_INTEGRATION}/test_write_fast_path.py::test_a_put_is_answered_through_the_fast_path_as_fastapi_answers_it",
            f"{_INTEGRATION}/test_write_path.py::test_a_put_is_one_round_trip_to_create_and_two_to_update",
        ),
    ),
    Selected(
        "whole rows read back: delta documents, lookup, search, anti-entropy re-publishing",
        (
            f"{_INTEGRATION}/test_delta.py::test_delta_documents_rendered_by_postgresql_equal_the_python_rendering",
            f"{_INTEGRATION}/test_delta.py::test_pages_are_ordered_and_interleave_tombstones",
            f"{_INTEGRATION}/test_lookup.py::test_any_spelling_of_the_url_finds_the_bookmark_as_put_returned_it",
            f"{_INTEGRATION}/test_search.py::test_a_put_is_searchable_as_soon_as_it_returns",
            f"{_INTEGRATION}/test_anti_entropy_routes.py::test_republish_writes_the_current_state_of_exactly_those_ids",
        ),
    ),
    Selected(
        "exports (JSON, CSV) and imports of whole records",
        (
            f"{_INTEGRATION}/test_exports.py::test_empty_library_exports_valid_files",
            f"{_INTEGRATION}/test_exports.py::test_json_export_holds_every_field_of_the_library",
            f"{_INTEGRATION}/test_exports.py::test_json_export_round_trips_through_the_import_parser",
            f"{_INTEGRATION}/test_exports.py::test_csv_export_is_one_safe_row_per_bookmark",
            f"{_INTEGRATION}/test_exports.py::test_json_export_round_trips_through_import_into_an_empty_account",
            f"{_INTEGRATION}/test_imports.py::test_a_netscape_import_has_every_outcome_and_lands_in_delta",
        ),
    ),
)


def selection_problems(root: Path, selection: Sequence[Selected] = SELECTION) -> list[str]:
    """Entries of ``selection`` naming no file or directory under ``root``, or no test function in their file."""
    problems = []
    for entry in (test for group in selection for test in group.tests):
        path, _, function = entry.partition("::")
        target = root / path
        if not target.exists():
            problems.append(f"{entry}: {path} does not exist")
        elif function and not re.search(rf"^(async )?def {re.escape(function)}\(", target.read_text("utf-8"), re.M):
            problems.append(f"{entry}: {path} defines no {function}")
    return problems


def check_selection(root: Path) -> None:
    if problems := selection_problems(root):
        print("field-check: the test selection names tests that do not exist:", *problems, sep="\n  ", flush=True)
        raise SystemExit(2)


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
        if not re.search(r"^import enum$", source, flags=re.M):  # the record may have an enum already
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
    tests = [test for group in SELECTION for test in group.tests]
    _run("tests", [str(copy / ".venv/bin/pytest"), "-q", "-p", "no:cacheprovider", *pytest_args, *tests], copy, env)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make field-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy (its path is printed)")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest")
    args = parser.parse_args(argv)
    started = time.monotonic()
    copy = Path(tempfile.mkdtemp(prefix="field-check-"))
    try:
        check_selection(ROOT)
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
