"""``bookmarks highlight`` / ``highlights``: parsing, writes (online and offline) and the listing, against the
in-memory fake service."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from client_fakes import FakeServer

from bookmark_client.cli import build_parser, main


def parse(*argv: str) -> dict[str, object]:
    return vars(build_parser({}).parse_args(list(argv)))


def test_highlight_commands_parse() -> None:
    listing = parse("highlights", "b1", "--json")
    assert (listing["command"], listing["bookmark_id"], listing["json"], listing["all"]) == (
        "highlights",
        "b1",
        True,
        False,
    )
    added = parse("highlight", "b1", "a passage", "--note", "n", "--color", "green")
    assert (added["bookmark_id"], added["quote"], added["note"], added["color"]) == ("b1", "a passage", "n", "green")
    assert parse("highlight", "--delete", "h1")["delete"] == "h1"
    for bad in (["highlight", "b1", "q", "--color", "red"], ["highlight", "--edit", "h1", "--delete", "h1"]):
        with pytest.raises(SystemExit) as exc:
            parse(*bad)
        assert exc.value.code == 2


class Cli:
    def __init__(self, fake: FakeServer, profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.fake, self.profile, self.capsys = fake, profile, capsys
        self.server = "http://bookmarks.test"

    def __call__(self, *args: str) -> tuple[int, str, str]:
        code = main(["--server", self.server, "--profile", str(self.profile), *args], transport=self.fake.transport())
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err


@pytest.fixture
def cli(fake: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(fake, tmp_path / "cli.sqlite", capsys)


def signed_in_with_a_bookmark(cli: Cli, fake: FakeServer) -> str:
    assert cli("login")[0] == 0
    (user_id,) = fake.users
    assert cli("add", "https://ferns.example/guide", "--id", "ferns", "--title", "Field guide to ferns")[0] == 0
    return user_id


def test_highlight_add_edit_list_and_delete(cli: Cli, fake: FakeServer) -> None:
    user_id = signed_in_with_a_bookmark(cli, fake)
    assert cli("highlights") == (0, "no highlights\n", "")

    code, out, _ = cli("highlight", "ferns", "  Ferns reproduce by spores. ", "--note", "check chapter 3", "--id", "h1")
    assert code == 0 and out == "highlighted h1 in Field guide to ferns (yellow)\n"
    assert fake.visible_highlights(user_id)["h1"]["quote"] == "Ferns reproduce by spores."
    assert cli("highlight", "ferns", "Not where they grow", "--color", "blue", "--id", "h2")[0] == 0
    # The server no longer finds it on the page.
    fake.server_highlight(user_id, "h1", bookmarkId="ferns", quote="Ferns reproduce by spores.", anchor="orphan")
    assert cli("sync")[0] == 0

    code, out, _ = cli("highlights")
    assert code == 0
    assert out.splitlines() == [
        "> Not where they grow",
        "  Field guide to ferns  [ferns] · blue · not looked for on the page yet · h2",
        "",
        "> Ferns reproduce by spores.",
        "  note: check chapter 3",
        "  Field guide to ferns  [ferns] · yellow · not found on the page any more · h1",
    ]
    records = json.loads(cli("highlights", "ferns", "--json")[1])
    assert [(r["id"], r["bookmarkId"], r["anchor"]) for r in records] == [
        ("h2", "ferns", None),
        ("h1", "ferns", "orphan"),
    ]

    code, out, _ = cli("highlight", "--edit", "h1", "--color", "pink")
    assert code == 0 and out == "changed highlight h1 (pink)\n"
    assert fake.visible_highlights(user_id)["h1"]["color"] == "pink"
    code, out, _ = cli("highlight", "--delete", "h2")
    assert code == 0 and out == "deleted highlight h2\n" and set(fake.visible_highlights(user_id)) == {"h1"}
    assert (
        cli("highlight", "--delete", "h2")[2]
        == "bookmarks: error: no highlight 'h2' here (run `bookmarks highlights` to see them)\n"
    )
    assert "h2" in {r["id"] for r in json.loads(cli("highlights", "--all", "--json")[1])}


def test_highlight_offline_is_queued_after_its_bookmark(cli: Cli, fake: FakeServer) -> None:
    user_id = signed_in_with_a_bookmark(cli, fake)
    cli.fake.script("PUT", "/v1/bookmarks/", httpx.ConnectError)
    assert cli("add", "https://moss.example/", "--id", "moss", "--title", "Mosses")[0] == 0
    cli.fake.script("PUT", "/v1/bookmarks/", httpx.ConnectError)
    code, out, _ = cli("highlight", "moss", "Mosses have no roots", "--id", "h1")
    assert code == 0 and out == "saved h1 offline (2 change(s) queued; run `bookmarks sync` when online)\n"
    code, out, _ = cli("highlights", "moss")
    assert out.splitlines()[-1] == "* not yet synced" and "h1*" in out

    assert cli("sync")[0] == 0
    assert [r for r in fake.requests if r == ("PUT", "/v1/highlights/h1")] == [("PUT", "/v1/highlights/h1")]
    assert fake.visible_highlights(user_id)["h1"]["bookmarkId"] == "moss"


def test_highlight_refusals(cli: Cli, fake: FakeServer) -> None:
    signed_in_with_a_bookmark(cli, fake)
    assert cli("highlight", "nowhere", "q")[2] == "bookmarks: error: no bookmark 'nowhere' here\n"
    assert cli("highlight", "ferns")[2] == "bookmarks: error: give BOOKMARK and QUOTE, or --edit ID, or --delete ID\n"
    assert cli("highlight", "ferns", "   ")[0] == 1  # an empty quote
    assert cli("highlights", "nowhere")[2] == "bookmarks: error: no bookmark 'nowhere' here\n"
    assert cli("highlight", "ferns", "q", "--id", "h1")[0] == 0
    assert cli("highlight", "--edit", "h1")[2] == "bookmarks: error: --edit needs --note or --color\n"
