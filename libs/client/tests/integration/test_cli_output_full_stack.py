"""What the CLI prints, against the whole platform: byte-stable piped output (a golden text), hostile titles
kept to one clean line, collections created by name (online and offline), and, in a real terminal (tmux),
fitted and aligned tables, colour rules and progress bars."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import cli
from tmux_support import Tmux, cli_command, tmux_server

TITLES = {
    "pizza": "How to Make Perfect Pizza Dough\nA step-by-step guide to a chewy, airy crust",
    "tokyo": "東京の桜が満開に — 今年の見頃はいつまで？",
    "party": "🍕 Pizza night 🎉 with friends 👨\u200d👩\u200d👧",
    "evil": "\x1b[31mRED\x1b[0m \u202eevil\u202c tab\there\x1b]0;pwned\x07",
}
DOMAINS = {"pizza": "pizza.example", "tokyo": "news.example.jp", "party": "party.example", "evil": "evil.example"}

# Newest first; each title is one line, whatever it holds; columns at the data's own width.
GOLDEN_LIST = """\
ID     TITLE                                                                        DOMAIN           TAGS                AI-TAGS  COLLECTIONS  STATE     ENRICHMENT  LINK
evil   RED evil tab here                                                            evil.example                                                         pending
party  🍕 Pizza night 🎉 with friends 👨\u200d👩\u200d👧                                            party.example                                              archived  pending
tokyo  東京の桜が満開に — 今年の見頃はいつまで？                                    news.example.jp  日本                                      favorite  pending
pizza  How to Make Perfect Pizza Dough A step-by-step guide to a chewy, airy crust  pizza.example    cooking, long read           Reading                pending
"""
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|9[0-7])[;m]")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


@pytest.fixture
def library(stack: Any, tmp_path: Path) -> tuple[Path, str]:
    """A signed-in profile holding four bookmarks with awkward titles (added oldest first)."""
    profile, server = tmp_path / "cli.sqlite", stack.gateway_url
    ok(cli(profile, server, "login", "--anonymous"))
    extra = {
        "pizza": ["--tag", "cooking", "--tag", "long read", "--collection", "Reading"],
        "tokyo": ["--tag", "日本", "--favorite"],
        "party": ["--archived"],
        "evil": [],
    }
    for bookmark_id, title in TITLES.items():
        url = f"https://{DOMAINS[bookmark_id]}/{bookmark_id}"
        ok(cli(profile, server, "add", url, "--id", bookmark_id, "--title", title, *extra[bookmark_id]))
    return profile, server


@pytest.fixture(scope="module")
def tmux() -> Iterator[Tmux]:
    with tmux_server() as server:
        yield server


def test_piped_list_equals_its_golden_text_at_any_width(library: tuple[Path, str], monkeypatch: Any) -> None:
    profile, server = library
    assert ok(cli(profile, server, "list")) == GOLDEN_LIST
    monkeypatch.setenv("COLUMNS", "40")
    assert ok(cli(profile, server, "list")) == GOLDEN_LIST
    records = json.loads(ok(cli(profile, server, "list", "--json")))
    assert {r["clientBookmarkId"]: r["title"] for r in records} == TITLES  # JSON keeps the data as it is
    assert "\x1b" not in ok(cli(profile, server, "list", "--json"))  # but escaped (\u001b), never raw


def test_piped_search_prints_clean_lines_and_marks_in_brackets(library: tuple[Path, str], monkeypatch: Any) -> None:
    profile, server = library
    out = ok(cli(profile, server, "search", "pizza"))
    monkeypatch.setenv("COLUMNS", "30")
    assert ok(cli(profile, server, "search", "pizza")) == out
    lines = out.splitlines()
    assert len(lines) == 6, out  # two results, three lines each: the newline title did not add one
    assert lines[0].startswith("  1. ") and lines[3].startswith("  2. ")
    assert "How to Make Perfect Pizza Dough A step-by-step guide to a chewy, airy crust  [pizza]" in out
    assert "[Pizza]" in out and not any(ch in out for ch in "\x1b\u202e\t")


def test_a_collection_named_on_add_is_created_online_and_offline(library: tuple[Path, str]) -> None:
    profile, server = library
    tree = json.loads(ok(cli(profile, server, "collections", "--json")))
    assert [(c["name"], c["level"]) for c in tree] == [("Reading", 1)]
    added = ok(cli(profile, server, "add", "https://again.example/", "--id", "again", "--collection", "READING"))
    assert "created collection" not in added  # the name, in any case, finds the one made before

    offline = f"http://127.0.0.1:{closed_port()}"
    added = ok(cli(profile, offline, "add", "https://later.example/", "--id", "later", "--collection", "Later"))
    (created,) = re.findall(r"^created collection Later \(([0-9a-f-]{36})\)$", added, re.M)
    assert "saved later offline (2 change(s) queued" in added
    assert "Later  (" in ok(cli(profile, offline, "collections"))  # shown at once, marked not yet synced

    assert ok(cli(profile, server, "sync")).startswith("sent 2 queued change(s)\n")
    tree = json.loads(ok(cli(profile, server, "collections", "--json")))
    assert {(c["id"], c["name"], c["pending"]) for c in tree} >= {(created, "Later", False)}
    records = {r["clientBookmarkId"]: r for r in json.loads(ok(cli(profile, server, "list", "--json")))}
    assert records["later"]["collectionIds"] == [created] and records["later"]["pending"] is False
    assert records["again"]["collectionIds"] == records["pizza"]["collectionIds"]


def test_list_in_an_80_column_terminal_has_aligned_unbroken_rows(library: tuple[Path, str], tmux: Tmux) -> None:
    profile, server = library
    lines = tmux.screen(cli_command(profile, server, "list"), width=80)
    assert [line.split()[0] for line in lines] == ["ID", "evil", "party", "tokyo", "pizza"], lines
    assert lines[4].startswith("pizza  How to Make Perfect Pizza Dough A step") and lines[4].find("…") > 0
    # Where the terminal itself puts each row's DOMAIN value: one column for every row, the header's.
    starts = {tmux.cells(line[: line.index(DOMAINS[line.split()[0]])]) for line in lines[1:]}
    assert starts == {tmux.cells(lines[0][: lines[0].index("DOMAIN")])}
    assert all(tmux.cells(line) <= 80 for line in lines)

    search = tmux.screen(cli_command(profile, server, "search", "pizza"), width=80)
    assert len(search) == 6 and search[3].startswith("  2. How to Make Perfect Pizza Dough A step")
    assert search[3].endswith("…  [pizza]") and all(tmux.cells(line) <= 80 for line in search)


def test_colour_on_a_terminal_but_not_with_no_color(library: tuple[Path, str], tmux: Tmux) -> None:
    profile, server = library
    coloured = "\n".join(tmux.screen(cli_command(profile, server, "list"), width=120, escapes=True))
    assert COLOUR.search(coloured), coloured
    empty = cli_command(profile, server, "list", env={"NO_COLOR": ""})  # present but empty: colour stays
    assert COLOUR.search("\n".join(tmux.screen(empty, width=120, escapes=True)))
    plain = "\n".join(tmux.screen(cli_command(profile, server, "list", env={"NO_COLOR": "1"}), width=120, escapes=True))
    assert not COLOUR.search(plain) and "pizza" in plain
    assert "\x1b" not in ok(cli(profile, server, "list"))  # and never on a pipe


def pocket_csv(path: Path, count: int) -> Path:
    rows = ["title,url,time_added,tags,status"]
    rows += [f"Item {i},https://cli-progress.example/{i},{1700000000 + i},t{i % 3},unread" for i in range(count)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_progress_bars_on_a_terminal_and_none_on_a_pipe(library: tuple[Path, str], tmux: Tmux, tmp_path: Path) -> None:
    profile, server = library
    export = pocket_csv(tmp_path / "pocket.csv", 400)
    screen = tmux.screen(cli_command(profile, server, "import", str(export), "--interval", "0.2"), width=100)
    uploading = next(line for line in screen if line.startswith("uploading "))
    importing = next(line for line in screen if line.startswith("importing "))
    size = f"{export.stat().st_size / 1000:.1f} kB"
    assert "━" in uploading and f"{size}/{size}" in uploading and "/s" in uploading  # a rate
    assert "━" in importing and "400/400 items" in importing and "items/s" in importing
    assert re.search(r"\d\d:\d\d$", importing)  # the time (remaining, then taken)
    assert screen[-1] == "imported 400 item(s) as pocket-csv: 400 created, 0 updated, 0 unchanged, 0 invalid"

    exported = tmux.screen(cli_command(profile, server, "export", "--format", "json") + " > /dev/null", width=100)
    assert any(line.startswith("exporting ") and "404/404 bookmarks" in line for line in exported), exported
    assert exported[-1].startswith("exported ") and exported[-1].endswith(" (json)")
    synced = tmux.screen(cli_command(profile, server, "sync"), width=100)
    assert synced[0].startswith("pulling ") and " records" in synced[0] and synced[-1].startswith("synced ")

    piped = cli(profile, server, "import", str(export), "--interval", "0.2")
    assert piped.stderr == "" and len(piped.stdout.splitlines()) == 2  # the two summary lines only
    exported_piped = cli(profile, server, "export", "--format", "csv")
    assert exported_piped.stderr.splitlines() == [exported_piped.stderr.strip()]  # just "exported … (csv)"
    synced_piped = cli(profile, server, "sync")
    assert synced_piped.returncode == 0 and synced_piped.stderr == "" and "━" not in synced_piped.stdout


def test_a_reader_that_stops_early_ends_the_command_quietly(library: tuple[Path, str], tmp_path: Path) -> None:
    profile, server = library
    assert cli(profile, server, "import", str(pocket_csv(tmp_path / "pocket.csv", 600))).returncode == 0
    argv = [sys.executable, "-m", "bookmark_client", "--server", server, "--profile", str(profile)]
    with subprocess.Popen([*argv, "export", "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        assert p.stdout is not None and p.stderr is not None
        assert p.stdout.read(100).startswith(b"{")  # like `| head -c 100`: far less than the export
        p.stdout.close()
        assert p.wait(timeout=120) == 141 and p.stderr.read() == b""
