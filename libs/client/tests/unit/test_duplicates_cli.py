"""``bookmarks duplicates`` / ``merge``: parsing and output against the in-memory fake service."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from client_fakes import FakeServer

from bookmark_client.cli import build_parser, main


def parse(*argv: str) -> dict[str, object]:
    return vars(build_parser({}).parse_args(list(argv)))


def test_duplicates_and_merge_parse() -> None:
    assert parse("duplicates")["command"] == "duplicates"
    assert parse("duplicates", "--json")["json"] is True
    merged = parse("merge", "keep", "b", "c")
    assert merged["keep"] == "keep" and merged["merge"] == ["b", "c"]
    with pytest.raises(SystemExit) as exc:
        parse("merge", "only-keep")
    assert exc.value.code == 2


class Cli:
    def __init__(self, fake: FakeServer, profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.fake, self.profile, self.capsys = fake, profile, capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        code = main(
            ["--server", "http://bookmarks.test", "--profile", str(self.profile), *args],
            transport=self.fake.transport(),
        )
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err


@pytest.fixture
def cli(fake: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(fake, tmp_path / "cli.sqlite", capsys)


def signed_in_with_duplicates(cli: Cli, fake: FakeServer) -> str:
    assert cli("login")[0] == 0
    (user_id,) = fake.users
    for bookmark_id, url, title in (
        ("f1", "https://www.ferns.example/guide?utm_source=x", "Field guide"),
        ("f2", "https://ferns.example/guide", ""),
        ("solo", "https://solo.example/", "Only once"),
    ):
        args = ["add", url, "--id", bookmark_id] + (["--title", title] if title else [])
        assert cli(*args)[0] == 0
    return user_id


def test_duplicates_lists_a_table_or_json(cli: Cli, fake: FakeServer) -> None:
    assert cli("duplicates")[0] == 4  # not signed in
    signed_in_with_duplicates(cli, fake)
    code, out, err = cli("duplicates")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["KEY", "ID", "TITLE", "SAVED"]
    assert rows[0].split()[:3] == ["https://ferns.example/guide", "f1", "Field"]
    assert rows[1].split()[:2] == ["f2", "https://ferns.example/guide"]  # untitled: its URL; the key once
    assert len(rows) == 2 and "solo" not in out
    assert "1 group: `bookmarks merge KEEP ID...`" in err
    records = json.loads(cli("duplicates", "--json")[1])
    assert [(g["key"], [b["clientBookmarkId"] for b in g["bookmarks"]]) for g in records] == [
        ("https://ferns.example/guide", ["f1", "f2"])
    ]


def test_merge_keeps_one_and_says_how_to_restore_the_others(cli: Cli, fake: FakeServer) -> None:
    user_id = signed_in_with_duplicates(cli, fake)
    code, out, _ = cli("merge", "f1", "f2")
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "kept f1: Field guide"
    assert lines[1] == (
        "merged 1 duplicate into it; they are in the trash: restore them with `bookmarks restore ID` (f2)"
    )
    assert lines[2].startswith("synced: 2 bookmark(s)")
    assert sorted(r.split()[0] for r in cli("list")[1].splitlines()[1:]) == ["f1", "solo"]  # no `sync` needed
    assert [r["clientBookmarkId"] for r in fake.trashed(user_id)] == ["f2"]
    assert cli("duplicates")[1].strip() == "no duplicates"

    code, _, err = cli("merge", "f1", "solo")
    assert code == 1 and err.strip().startswith("bookmarks: error: nothing merged: Not a duplicate of keep.")
    assert "solo" in fake.visible(user_id)


def test_duplicates_send_queued_changes_first(cli: Cli, fake: FakeServer) -> None:
    cli("login")
    fake.script("PUT", "/v1/bookmarks/", httpx.ConnectError, httpx.ConnectError)
    assert cli("add", "https://dup.example/a", "--id", "d1")[0] == 0
    assert cli("add", "https://www.dup.example/a", "--id", "d2")[0] == 0
    code, out, _ = cli("duplicates")
    assert code == 0
    assert out.splitlines()[0] == "sent 2 queued change(s)"
    assert [r.split()[0] for r in out.splitlines()[2:]][:1] == ["https://dup.example/a"]
