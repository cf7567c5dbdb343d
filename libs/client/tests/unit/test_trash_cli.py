"""``bookmarks trash`` / ``restore`` / ``delete``: parsing, output and confirmation, against the in-memory
fake service."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from client_fakes import FakeServer

from bookmark_client import cli as cli_module
from bookmark_client.cli import _since, build_parser, main


def parse(*argv: str) -> dict[str, object]:
    return vars(build_parser({}).parse_args(list(argv)))


def test_trash_and_restore_parse() -> None:
    assert parse("trash")["command"] == "trash"
    assert parse("trash", "--json")["json"] is True
    assert parse("trash", "--empty", "--yes")["empty"] is True
    assert parse("trash", "--purge", "abc")["purge"] == "abc"
    assert parse("restore", "abc")["bookmark_id"] == "abc"
    assert parse("delete", "abc")["bookmark_id"] == "abc"
    since = parse("restore", "--since", "2026-11-28T09:00:00Z")
    assert since["bookmark_id"] is None and since["since"] == datetime(2026, 11, 28, 9, tzinfo=UTC)
    for wrong in (["trash", "--empty", "--purge", "x"], ["restore"], ["restore", "x", "--since", "1h"]):
        with pytest.raises(SystemExit) as exc:
            parse(*wrong)
        assert exc.value.code == 2, wrong


def test_since_takes_a_time_ago_or_an_iso_timestamp(capsys: pytest.CaptureFixture[str]) -> None:
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    assert _since("90m", now=now) == datetime(2026, 11, 28, 10, 30, tzinfo=UTC)
    assert _since("2h", now=now) == datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
    assert _since(" 3D ", now=now) == datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert _since("1w", now=now) == datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert _since("45s", now=now) == now - timedelta(seconds=45)
    assert _since("2026-11-28T09:00:00+02:00") == datetime(2026, 11, 28, 7, 0, tzinfo=UTC)
    # No zone: the local time of this machine.
    assert _since("2026-11-28T09:00") == datetime(2026, 11, 28, 9, 0).astimezone().astimezone(UTC)
    with pytest.raises(SystemExit) as exc:
        parse("restore", "--since", "yesterday")
    assert exc.value.code == 2
    assert "neither a time ago" in capsys.readouterr().err


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


def signed_in_with_deleted(cli: Cli, fake: FakeServer, *titles: str) -> str:
    """A signed-in profile whose bookmarks ``d0``, ``d1``… (titled ``titles``) were deleted in that order."""
    assert cli("login")[0] == 0
    (user_id,) = fake.users
    for n, title in enumerate(titles):
        assert cli("add", f"https://d{n}.example/page", "--id", f"d{n}", "--title", title)[0] == 0
    for n in range(len(titles)):
        code, out, _ = cli("delete", f"d{n}")
        assert code == 0 and out.startswith(f"deleted d{n} (to the trash"), out
    return user_id


def test_trash_lists_a_table_or_json(cli: Cli, fake: FakeServer) -> None:
    assert cli("trash")[0] == 4  # not signed in
    signed_in_with_deleted(cli, fake, "First one", "Second\none")
    code, out, _ = cli("trash")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "TITLE", "DOMAIN", "DELETED", "PURGE-DATE"]
    assert [r.split()[0] for r in rows] == ["d1", "d0"]  # most recently deleted first
    assert rows[0].split()[1:] == ["Second", "one", "d1.example", "2030-01-01", "00:00", "2030-01-31"]
    records = json.loads(cli("trash", "--json")[1])
    assert [(r["bookmark"]["clientBookmarkId"], r["bookmark"]["title"]) for r in records] == [
        ("d1", "Second\none"),
        ("d0", "First one"),
    ]
    assert set(records[0]) == {"bookmark", "deletedAt", "purgeAt", "mergedInto"}
    assert cli("trash", "--yes")[2].strip() == "bookmarks: error: --yes goes with --empty"


def test_trash_pages_through_everything(cli: Cli, fake: FakeServer) -> None:
    signed_in_with_deleted(cli, fake, *(f"Title {n}" for n in range(103)))
    code, out, _ = cli("trash")
    assert code == 0 and len(out.splitlines()) == 1 + 103
    assert [u.params.get("cursor") for u in fake.urls if u.path == "/v1/trash"][-2:] == [None, "t100"]


def test_restore_one_brings_it_back_into_the_local_library(cli: Cli, fake: FakeServer) -> None:
    user_id = signed_in_with_deleted(cli, fake, "Keep me", "Not me")
    assert cli("list")[1].strip() == "no bookmarks"
    code, out, _ = cli("restore", "d0")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "restored d0: Keep me"
    assert lines[1].startswith("synced: 1 bookmark(s)")
    assert [r.split()[0] for r in cli("list")[1].splitlines()[1:]] == ["d0"]  # no `sync` needed
    assert "d0" in fake.visible(user_id)
    code, _, err = cli("restore", "d0")
    assert code == 1 and err.strip() == "bookmarks: error: d0 is not in the trash (run `bookmarks trash` to see it)"


def test_restore_since_restores_what_was_deleted_since_then(cli: Cli, fake: FakeServer) -> None:
    user_id = signed_in_with_deleted(cli, fake, "Early", "Middle", "Late")
    middle = next(r for r in fake.trashed(user_id) if r["clientBookmarkId"] == "d1")["_deletedAt"]
    code, out, _ = cli("restore", "--since", middle)
    assert code == 0 and out.splitlines()[0].startswith("restored 2 bookmarks deleted since 2030-01-01 00:00:00 UTC")
    assert sorted(r.split()[0] for r in cli("list")[1].splitlines()[1:]) == ["d1", "d2"]
    assert [r["clientBookmarkId"] for r in fake.trashed(user_id)] == ["d0"]
    code, out, _ = cli("restore", "--since", "1h")  # the fake's clock is in 2030: one hour ago is before it
    assert code == 0 and out.splitlines()[0].startswith("restored 1 bookmark deleted since")


def test_restore_since_asks_again_while_the_server_restored_its_most(
    cli: Cli, fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_id = signed_in_with_deleted(cli, fake, "a", "b", "c", "d", "e")
    fake.max_restored = 2
    monkeypatch.setattr(cli_module, "MAX_RESTORED_PER_CALL", 2)
    code, out, _ = cli("restore", "--since", "2000-01-01T00:00:00Z")
    assert code == 0 and out.splitlines()[0] == "restored 5 bookmarks deleted since 2000-01-01 00:00:00 UTC"
    assert fake.requests.count(("POST", "/v1/trash/restore")) == 3
    assert fake.trashed(user_id) == []


def test_purge_and_empty(cli: Cli, fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    user_id = signed_in_with_deleted(cli, fake, "One", "Two", "Three")
    assert cli("trash", "--purge", "d1")[1].strip() == "deleted d1 for good"
    assert [r["clientBookmarkId"] for r in fake.trashed(user_id)] == ["d2", "d0"]
    assert cli("restore", "d1")[0] == 1  # gone for good

    # No terminal to ask on: --empty needs --yes, and nothing is deleted.
    code, _, err = cli("trash", "--empty")
    assert code == 1 and "confirm with --yes" in err
    assert len(fake.trashed(user_id)) == 2

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    code, _, err = cli("trash", "--empty")
    assert code == 1 and "Empty the trash?" in err and err.strip().endswith("nothing deleted")
    assert len(fake.trashed(user_id)) == 2
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert cli("trash", "--empty") == (
        0,
        "the trash is empty\n",
        "Empty the trash? Everything in it is deleted for good and cannot be restored. [y/N] ",
    )
    assert fake.trashed(user_id) == []
    assert cli("trash")[1].strip() == "the trash is empty"
    signed_in = cli("add", "https://again.example/", "--id", "again")
    assert signed_in[0] == 0 and cli("delete", "again")[0] == 0
    assert cli("trash", "--empty", "--yes")[1].strip() == "the trash is empty"
    assert fake.trashed(user_id) == []


def test_a_delete_made_offline_reaches_the_trash_before_it_is_listed(cli: Cli, fake: FakeServer) -> None:
    cli("login")
    assert cli("add", "https://offline.example/", "--id", "off")[0] == 0
    fake.script("DELETE", "/v1/bookmarks/off", httpx.ConnectError)
    code, out, _ = cli("delete", "off")
    assert code == 0 and "offline" in out
    code, out, _ = cli("trash")
    assert code == 0
    assert out.splitlines()[0] == "sent 1 queued change(s)"
    assert [r.split()[0] for r in out.splitlines()[2:]] == ["off"]
    assert cli("delete", "nothing-here")[0] == 1
