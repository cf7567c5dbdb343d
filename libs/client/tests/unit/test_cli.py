"""Command-line parsing and the one-line error contract."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest
from client_fakes import FakeServer

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


def test_pair_login_with_a_code_and_capture_options() -> None:
    assert parse("pair")["command"] == "pair"
    assert parse("login", "--code", "ABCD-2345")["code"] == "ABCD-2345"
    with pytest.raises(SystemExit) as exc:
        parse("login", "--code", "ABCD-2345", "--idp-a-token", "TOKEN")
    assert exc.value.code == 2
    args = parse("capture", "https://e.com/p", "--file", "page.html", "--id", "cap-1", "--title", "T")
    assert (args["url"], args["file"], args["bookmark_id"], args["title"]) == (
        "https://e.com/p",
        "page.html",
        "cap-1",
        "T",
    )
    assert parse("capture", "https://e.com/p", "--file", "p.html")["bookmark_id"] is None
    with pytest.raises(SystemExit) as missing:
        parse("capture", "https://e.com/p")  # --file is required
    assert missing.value.code == 2


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


# -- the library commands, against the in-memory fake service ------------------------------------


def test_library_commands_parse() -> None:
    assert parse("tag", "x", "a", "b", "--remove") | {"server": None, "profile": None} == {
        "server": None,
        "profile": None,
        "command": "tag",
        "bookmark_id": "x",
        "tags": ["a", "b"],
        "remove": True,
    }
    assert parse("archive", "x", "--undo")["undo"] is True
    assert parse("collections")["collections_command"] is None
    add = parse("collections", "add", "c1", "My name", "--parent", "p")
    assert (add["collections_command"], add["collection_id"], add["name"], add["parent"]) == (
        "add",
        "c1",
        "My name",
        "p",
    )
    assert parse("collections", "move", "c1", "--top")["top"] is True
    with pytest.raises(SystemExit) as exc:
        parse("collections", "move", "c1")  # where to? --parent P or --top
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        parse("tag", "x")  # at least one tag
    listing = parse("list", "--archived", "--tag", "t", "--collection", "c")
    assert (listing["archived"], listing["unarchived"], listing["tag"], listing["collection"]) == (
        True,
        False,
        "t",
        "c",
    )
    with pytest.raises(SystemExit):
        parse("list", "--archived", "--unarchived")
    assert parse("add", "https://e.com/", "--tag", "a", "--tag", "b", "--collection", "c")["tags"] == ["a", "b"]


class Cli:
    """Runs ``bookmarks`` commands on one profile against the fake service; returns (exit code, out, err)."""

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


def test_collections_tags_and_archive_from_the_command_line(cli: Cli, fake: FakeServer) -> None:
    assert cli("tag", "x", "a")[0] == 4  # not signed in: nothing is queued
    assert cli("login")[0] == 0
    (user_id,) = fake.users

    code, out, _ = cli("collections")
    assert (code, out.strip()) == (0, "no collections")
    assert cli("collections", "add", "reading", "Reading")[1].strip() == "created collection reading: Reading"
    code, out, _ = cli("collections", "add", "deep", "Deep dives", "--parent", "reading")  # parent by name works too
    assert code == 0, out
    code, out, _ = cli("add", "https://x.example/a", "--id", "x", "--tag", "Long read", "--collection", "Deep dives")
    assert code == 0 and "added x" in out
    code, out, _ = cli("add", "https://y.example/", "--id", "y", "--collection", "Elsewhere")
    (created,) = [c for c in fake.visible_collections(user_id).values() if c["name"] == "Elsewhere"]
    assert code == 0 and out.splitlines()[0] == f"created collection Elsewhere ({created['id']})"
    assert fake.visible(user_id)["y"]["collectionIds"] == [created["id"]]
    assert cli("file", "y", "ELSEWHERE")[1].strip() == "y: in Elsewhere"  # found by name: not created again
    assert len(fake.visible_collections(user_id)) == 3
    assert cli("collections", "rm", "elsewhere")[0] == 0

    assert cli("tag", "x", "python", "LONG READ")[1].strip() == "x: tags Long read, python"
    assert cli("tag", "x", "long read", "--remove")[1].strip() == "x: tags python"
    assert cli("archive", "x")[1].strip() == "archived x"
    assert cli("file", "x", "reading")[1].strip() == "x: in Deep dives, Reading"
    server = fake.visible(user_id)["x"]
    assert (server["userTags"], server["isArchived"], server["collectionIds"]) == (
        ["python"],
        True,
        ["deep", "reading"],
    )

    code, out, _ = cli("list")
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "TITLE", "DOMAIN", "TAGS", "AI-TAGS", "COLLECTIONS", "STATE", "ENRICHMENT", "LINK"]
    (row_x,) = [r for r in rows if r.startswith("x ")]
    assert "python" in row_x and "Deep dives, Reading" in row_x and "archived" in row_x
    assert [r.split()[0] for r in cli("list", "--archived")[1].splitlines()[1:]] == ["x"]
    assert [r.split()[0] for r in cli("list", "--unarchived")[1].splitlines()[1:]] == ["y"]
    assert [r.split()[0] for r in cli("list", "--tag", "PYTHON")[1].splitlines()[1:]] == ["x"]
    assert [r.split()[0] for r in cli("list", "--collection", "reading")[1].splitlines()[1:]] == ["x"]

    code, out, _ = cli("collections")
    assert out.splitlines() == ["Reading  (reading, 1 bookmark)", "  Deep dives  (deep, 1 bookmark)"]
    tree = json.loads(cli("collections", "--json")[1])
    assert [(c["id"], c["level"], c["parentId"]) for c in tree] == [("reading", 1, None), ("deep", 2, "reading")]

    assert cli("collections", "move", "deep", "--top")[1].strip() == "moved deep to the top level"
    assert cli("collections", "rename", "deep", "Deep")[1].strip() == "renamed deep to Deep"
    assert fake.visible_collections(user_id)["deep"]["parentId"] is None
    assert cli("collections", "rm", "deep")[1].strip() == "deleted collection deep"
    assert cli("sync")[0] == 0
    assert fake.visible(user_id)["x"]["collectionIds"] == ["reading"]  # the server unfiled it
    code, out, _ = cli("list", "--json")
    assert {r["clientBookmarkId"]: r["collectionIds"] for r in json.loads(out)}["x"] == ["reading"]
    assert cli("collections")[1].splitlines() == ["Reading  (reading, 1 bookmark)"]


def test_library_command_errors_are_one_line(cli: Cli) -> None:
    cli("login")
    cli("collections", "add", "a", "A")
    cli("collections", "add", "b", "B", "--parent", "a")
    for args, message in [
        (("collections", "move", "a", "--parent", "b"), "into itself"),
        (("collections", "rename", "nope", "N"), "no collection 'nope' here"),
        (("collections", "rm", "nope"), "no collection 'nope' here"),
        (("collections", "add", "c", "C", "--parent", "nope"), "no collection 'nope' here"),
        (("collections", "add", "bad id", "C"), "collection id must match"),
        (("tag", "nope", "t"), "does not exist locally"),
        (("tag", "b", "bad\ttag"), "does not exist locally"),
        (("archive", "nope"), "does not exist locally"),
        (("file", "nope", "a"), "no bookmark 'nope' here"),
        (("list", "--collection", "nope"), "no collection 'nope' here"),
    ]:
        code, _, err = cli(*args)
        assert code == 1 and err.count("\n") == 1 and message in err, (args, err)
    assert cli("collections", "rename", "a", "Same")[0] == 0
    assert cli("collections", "rename", "b", "same")[0] == 0
    code, _, err = cli("collections", "rm", "SAME")  # by name, but two collections answer to it
    assert code == 1 and "2 collections are named 'SAME' (a, b); give the id" in err
    assert cli("collections", "move", "Same", "--top")[0] == 1
    assert cli("collections", "move", "b", "--top")[1].strip() == "moved b to the top level"
    cli("add", "https://e.com/", "--id", "e")
    code, _, err = cli("tag", "e", "bad\ttag")
    assert code == 1 and "userTags" in err


def test_library_writes_work_offline(cli: Cli, fake: FakeServer) -> None:
    cli("login")
    fake.script("PUT", "/v1/collections/", httpx.ConnectError)
    code, out, _ = cli("collections", "add", "reading", "Reading")
    assert code == 0 and out.strip().startswith("saved reading offline (1 change(s) queued")
    fake.script("PUT", "/v1/collections/", httpx.ConnectError)
    code, out, _ = cli("add", "https://x.example/", "--id", "x", "--collection", "reading")
    assert code == 0 and "saved x offline (2 change(s) queued" in out
    assert cli("collections")[1].splitlines() == ["Reading  (reading*, 1 bookmark)", "* not yet synced"]
    code, out, _ = cli("sync")
    assert code == 0 and out.splitlines()[0] == "sent 2 queued change(s)"
    assert out.splitlines()[-1].startswith(
        "synced 1 page(s): 1 upsert(s), 0 tombstone(s), 1 collection(s), 0 collection tombstone(s), 0 changed"
    )
    (user_id,) = fake.users
    assert fake.visible(user_id)["x"]["collectionIds"] == ["reading"] and "reading" in fake.visible_collections(user_id)
    assert cli("collections")[1].splitlines() == ["Reading  (reading, 1 bookmark)"]


def test_export_streams_to_stdout_with_a_summary_on_stderr(cli: Cli, fake: FakeServer) -> None:
    assert cli("export", "--format", "json")[0] == 4  # not signed in
    assert cli("login")[0] == 0
    assert cli("add", "https://e.com/", "--id", "b1", "--title", "Caf\u00e9")[0] == 0
    fake.expire_all_access_tokens()  # a 401 before the first byte: refreshed once, then streamed
    code, out, err = cli("export", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert [(b["clientBookmarkId"], b["title"]) for b in data["bookmarks"]] == [("b1", "Caf\u00e9")]
    assert err.startswith("exported ") and "(json)" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        parse("export", "--format", "xml")
    with pytest.raises(SystemExit):
        parse("export")  # the format is required


def test_export_without_a_server_fails_with_one_line(cli: Cli, fake: FakeServer) -> None:
    assert cli("login")[0] == 0
    fake.script("GET", "/v1/exports", httpx.RemoteProtocolError)
    code, _, err = cli("export", "--format", "csv")
    assert code == 3 and err.count("\n") == 1 and "cannot reach" in err


def test_check_asks_the_server_and_list_shows_the_link_status(cli: Cli, fake: FakeServer) -> None:
    assert cli("check", "x")[0] == 4  # not signed in
    cli("login")
    (user_id,) = fake.users
    assert cli("add", "https://gone.example/page", "--id", "g")[0] == 0
    assert cli("add", "https://fine.example/", "--id", "f")[0] == 0
    code, out, _ = cli("check", "g")
    assert code == 0 and out.startswith("g: link check queued")
    code, out, _ = cli("check", "https://fine.example/")
    assert code == 0 and out.startswith("f: link check queued")
    assert fake.link_checks == ["g", "f"]
    code, _, err = cli("check", "https://never.example/")
    assert code == 1 and "no bookmark of https://never.example/" in err
    code, _, err = cli("check", "nope")
    assert code == 1 and "not-found" in err

    fake.server_enrich(user_id, "g", linkStatus="gone", linkCheckedAt="2030-01-02T00:00:00.000000Z")
    assert cli("sync")[0] == 0
    rows = {line.split()[0]: line for line in cli("list")[1].splitlines()[1:]}
    assert rows["g"].split()[-1] == "gone"
    assert "gone" not in rows["f"]
    assert {r["clientBookmarkId"]: r["linkStatus"] for r in json.loads(cli("list", "--json")[1])} == {
        "g": "gone",
        "f": None,
    }
