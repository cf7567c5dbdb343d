"""Command-line parsing and the one-line error contract."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bookmark_client.cli import DEFAULT_PROFILE, DEFAULT_SERVER, build_parser, main


def parse(*argv: str, env: dict[str, str] | None = None) -> dict[str, object]:
    return vars(build_parser(env or {}).parse_args(list(argv)))


def test_defaults_and_env() -> None:
    args = parse("list")
    assert args["server"] == DEFAULT_SERVER and args["profile"] == DEFAULT_PROFILE
    assert parse("list", env={"BOOKMARKS_SERVER": "http://h:1"})["server"] == "http://h:1"


def test_global_options_before_or_after_the_command() -> None:
    before = parse("--server", "http://a:1", "--profile", "/p.sqlite", "sync")
    after = parse("sync", "--server", "http://a:1", "--profile", "/p.sqlite")
    assert before == after
    assert before["server"] == "http://a:1" and before["profile"] == "/p.sqlite"
    # Given before only: the subcommand's (suppressed) default must not overwrite it.
    assert parse("--server", "http://b:2", "watch")["server"] == "http://b:2"


def test_login_variants() -> None:
    assert parse("login")["idp_a_token"] is None
    assert parse("login", "--anonymous")["anonymous"] is True
    args = parse("login", "--idp-a-token", "TOKEN", "--link")
    assert args["idp_a_token"] == "TOKEN" and args["link"] is True
    with pytest.raises(SystemExit) as exc:
        parse("login", "--anonymous", "--idp-a-token", "TOKEN")
    assert exc.value.code == 2


def test_add_options() -> None:
    args = parse("add", "https://e.com/", "--title", "T", "--id", "abc", "--favorite", "--notes", "N", "--enrich")
    assert (args["url"], args["title"], args["bookmark_id"], args["favorite"], args["notes"], args["enrich"]) == (
        "https://e.com/",
        "T",
        "abc",
        True,
        "N",
        True,
    )
    plain = parse("add", "https://e.com/")
    assert plain["bookmark_id"] is None and plain["favorite"] is False and plain["enrich"] is False


def test_list_enrich_settings_logout() -> None:
    assert parse("list", "--json")["json"] is True
    enrich = parse("enrich", "abc", "--wait")
    assert enrich["bookmark_id"] == "abc" and enrich["wait"] is True and enrich["interval"] == 1.0
    assert parse("settings")["use_ai"] is None
    assert parse("settings", "--use-ai", "on")["use_ai"] is True
    assert parse("settings", "--use-ai", "OFF")["use_ai"] is False
    with pytest.raises(SystemExit):
        parse("settings", "--use-ai", "maybe")
    with pytest.raises(SystemExit):
        parse("enrich", "abc", "--interval", "0")
    assert parse("logout", "--discard-pending")["discard_pending"] is True


def test_a_command_is_required() -> None:
    with pytest.raises(SystemExit) as exc:
        parse()
    assert exc.value.code == 2


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_errors_are_one_line_with_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = str(tmp_path / "p.sqlite")
    server = f"http://127.0.0.1:{closed_port()}"

    assert main(["--profile", profile, "list"]) == 0
    assert capsys.readouterr().out.strip() == "no bookmarks"

    assert main(["--profile", profile, "add", "https://e.com/"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not signed in" in err and "Traceback" not in err

    assert main(["--profile", profile, "--server", server, "login"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach the server" in err

    assert main(["--profile", profile, "enrich", "bad id!"]) == 1
    assert "bookmark id must match" in capsys.readouterr().err
