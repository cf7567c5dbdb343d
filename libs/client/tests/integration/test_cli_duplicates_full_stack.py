"""Duplicates from the command line, against the whole platform: the same link saved under three
spellings listed as one group, merged into the chosen copy (the others to the trash with ``mergedInto``),
``list`` showing the merge at once, and a restore from the trash undoing it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cli_support import cli

SAVED = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def listed(profile: Path, server: str) -> list[str]:
    return sorted(r["clientBookmarkId"] for r in json.loads(ok(cli(profile, server, "list", "--json"))))


def test_duplicates_merge_list_and_restore(stack: Any, tmp_path: Path) -> None:
    profile, server = tmp_path / "cli.sqlite", stack.gateway_url
    ok(cli(profile, server, "login", "--anonymous"))
    assert ok(cli(profile, server, "duplicates")) == "no duplicates\n"
    saves = (
        ("first", "https://www.ferns.example/guide?utm_source=news", "Field guide to ferns", "plants"),
        ("second", "https://ferns.example/guide", "Ferns, saved again", "reading"),
        ("third", "https://FERNS.example/guide#top", "Ferns once more", "later"),
        ("other", "https://moss.example/", "Moss", "plants"),
    )
    for bookmark_id, url, title, tag in saves:
        ok(cli(profile, server, "add", url, "--id", bookmark_id, "--title", title))
        ok(cli(profile, server, "tag", bookmark_id, tag))

    header, *rows = ok(cli(profile, server, "duplicates")).splitlines()
    assert header.split() == ["KEY", "ID", "TITLE", "SAVED"]
    assert len(rows) == 3 and "moss" not in "\n".join(rows)
    assert rows[0].split()[:2] == ["https://ferns.example/guide", "first"]  # the key once, oldest save first
    assert [r.split()[0] for r in rows[1:]] == ["second", "third"]
    assert all(SAVED.match(r.split()[-1]) for r in rows)
    (group,) = json.loads(ok(cli(profile, server, "duplicates", "--json")))
    assert group["key"] == "https://ferns.example/guide"
    assert [b["clientBookmarkId"] for b in group["bookmarks"]] == ["first", "second", "third"]

    refused = cli(profile, server, "merge", "first", "other")
    assert refused.returncode == 1 and "nothing merged" in refused.stderr
    out = ok(cli(profile, server, "merge", "second", "first", "third")).splitlines()
    assert out[0] == "kept second: Ferns, saved again"
    assert out[1] == (
        "merged 2 duplicates into it; they are in the trash: restore them with `bookmarks restore ID` (first third)"
    )
    assert out[2].startswith("synced: 2 bookmark(s)")
    assert listed(profile, server) == ["other", "second"]  # at once: the merge synced
    (kept,) = [r for r in json.loads(ok(cli(profile, server, "list", "--json"))) if r["clientBookmarkId"] == "second"]
    assert kept["userTags"] == ["reading", "plants", "later"]
    trash = json.loads(ok(cli(profile, server, "trash", "--json")))
    assert sorted((r["bookmark"]["clientBookmarkId"], r["mergedInto"]) for r in trash) == [
        ("first", "second"),
        ("third", "second"),
    ]
    assert ok(cli(profile, server, "duplicates")) == "no duplicates\n"

    # A restore from the trash undoes the merge for that one: the group is back.
    assert ok(cli(profile, server, "restore", "first")).startswith("restored first: Field guide to ferns")
    assert listed(profile, server) == ["first", "other", "second"]
    (group,) = json.loads(ok(cli(profile, server, "duplicates", "--json")))
    assert sorted(b["clientBookmarkId"] for b in group["bookmarks"]) == ["first", "second"]
