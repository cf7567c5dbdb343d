"""The trash from the command line, against the whole platform: deleted bookmarks listed, one restored and
shown by ``list`` at once, everything deleted since a time restored, one purged, the rest emptied; a second
device gets the restores through its ordinary sync."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli_support import cli

TRASH_ROW = re.compile(r"^(\S+)\s+(.+?)\s+(\S+\.example)\s+(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\s+(\d{4}-\d{2}-\d{2})$")


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def listed(profile: Path, server: str) -> list[str]:
    return sorted(r["clientBookmarkId"] for r in json.loads(ok(cli(profile, server, "list", "--json"))))


def test_trash_restore_purge_and_empty(stack: Any, tmp_path: Path) -> None:
    profile, server = tmp_path / "cli.sqlite", stack.gateway_url
    ok(cli(profile, server, "login", "--anonymous"))
    titles = {"bread": "Sourdough starter notes", "lisbon": "Packing list for Lisbon", "talks": "Conference talks"}
    for bookmark_id, title in titles.items():
        ok(cli(profile, server, "add", f"https://{bookmark_id}.example/", "--id", bookmark_id, "--title", title))
    ok(cli(profile, server, "add", "https://kept.example/", "--id", "kept", "--title", "Kept"))
    assert ok(cli(profile, server, "trash")) == "the trash is empty\n"

    assert ok(cli(profile, server, "delete", "bread")).startswith("deleted bread (to the trash")
    time.sleep(0.05)  # the deletes after this moment are the ones --since brings back
    since = datetime.now(UTC)
    time.sleep(0.05)
    ok(cli(profile, server, "delete", "lisbon"))
    ok(cli(profile, server, "delete", "talks"))
    assert listed(profile, server) == ["kept"]

    header, *rows = ok(cli(profile, server, "trash")).splitlines()
    assert header.split() == ["ID", "TITLE", "DOMAIN", "DELETED", "PURGE-DATE"]
    parsed = [TRASH_ROW.match(row) for row in rows]
    assert all(parsed), rows
    assert [(m[1], m[2], m[3]) for m in parsed if m] == [
        ("talks", "Conference talks", "talks.example"),
        ("lisbon", "Packing list for Lisbon", "lisbon.example"),
        ("bread", "Sourdough starter notes", "bread.example"),
    ]  # most recently deleted first
    for m in parsed:
        assert m is not None and m[5] > m[4][:10]  # purged for good some days after the delete
    records = json.loads(ok(cli(profile, server, "trash", "--json")))
    assert [r["bookmark"]["clientBookmarkId"] for r in records] == ["talks", "lisbon", "bread"]
    assert all(r["purgeAt"] > r["deletedAt"] and r["mergedInto"] is None for r in records)

    # A second device of the account, to see restores arrive through delta.
    other = tmp_path / "other.sqlite"
    code = re.search(r"pairing code: (\S+)", ok(cli(profile, server, "pair")))
    assert code is not None
    ok(cli(other, server, "login", "--code", code[1]))
    assert listed(other, server) == ["kept"]

    out = ok(cli(profile, server, "restore", "bread")).splitlines()
    assert out[0] == "restored bread: Sourdough starter notes" and out[1].startswith("synced: 2 bookmark(s)")
    assert listed(profile, server) == ["bread", "kept"]  # at once: the restore synced
    assert "Sourdough starter notes" in ok(cli(profile, server, "list"))
    failed = cli(profile, server, "restore", "bread")
    assert failed.returncode == 1 and "bread is not in the trash" in failed.stderr

    out = ok(cli(profile, server, "restore", "--since", since.isoformat())).splitlines()
    assert out[0] == f"restored 2 bookmarks deleted since {since:%Y-%m-%d %H:%M:%S} UTC"
    assert listed(profile, server) == ["bread", "kept", "lisbon", "talks"]
    assert ok(cli(profile, server, "trash")) == "the trash is empty\n"
    ok(cli(other, server, "sync"))
    assert listed(other, server) == ["bread", "kept", "lisbon", "talks"]

    # Purge one, then empty the rest (no terminal here: --yes).
    for bookmark_id in ("lisbon", "talks", "kept"):
        ok(cli(profile, server, "delete", bookmark_id))
    assert ok(cli(profile, server, "trash", "--purge", "lisbon")) == "deleted lisbon for good\n"
    assert [r["bookmark"]["clientBookmarkId"] for r in json.loads(ok(cli(profile, server, "trash", "--json")))] == [
        "kept",
        "talks",
    ]
    refused = cli(profile, server, "trash", "--empty")
    assert refused.returncode == 1 and "confirm with --yes" in refused.stderr
    assert ok(cli(profile, server, "trash", "--empty", "--yes")) == "the trash is empty\n"
    assert ok(cli(profile, server, "trash")) == "the trash is empty\n"
    assert cli(profile, server, "restore", "talks").returncode == 1
    assert ok(cli(profile, server, "restore", "--since", "1d")).startswith("restored 0 bookmarks deleted since")
    assert listed(profile, server) == ["bread"]
