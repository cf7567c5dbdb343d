"""Import through the whole platform (docs/api-guide.md section 13): the CLI uploads through the gateway (its own
50 MiB body limit on this route only), polls (progress bars on a terminal only) and prints a summary; every imported
bookmark reaches the device through delta."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from cli_support import cli

from devstack.testing import raw_exchange, raw_request

ITEMS = 300


def pocket_csv(path: Path, count: int) -> Path:
    rows = ["title,url,time_added,tags,status"]
    rows += [
        f"Item {i},https://cli-import.example/{i},{1700000000 + i},t{i % 3},{'archive' if i % 2 else 'unread'}"
        for i in range(count)
    ]
    rows.append("Broken,mailto:someone@example.com,1700000000,,unread")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_cli_import_shows_progress_and_a_summary_and_syncs_the_library(stack: Any, tmp_path: Path) -> None:
    profile, server = tmp_path / "cli.sqlite", stack.gateway_url
    assert cli(profile, server, "login", "--anonymous").returncode == 0

    done = cli(profile, server, "import", str(pocket_csv(tmp_path / "pocket.csv", ITEMS)), "--interval", "0.2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("import ") and "uploaded" in lines[0]
    assert len(lines) == 2 and done.stderr == ""  # piped: the summary lines, no progress
    assert lines[-1] == (
        f"imported {ITEMS + 1} item(s) as pocket-csv: {ITEMS} created, 0 updated, 0 unchanged, 1 invalid"
    )

    listed = cli(profile, server, "list", "--json")  # the import's bookmarks arrived through delta
    assert listed.returncode == 0
    records = json.loads(listed.stdout)
    assert sorted(r["url"] for r in records) == sorted(f"https://cli-import.example/{i}" for i in range(ITEMS))
    assert sum(r["isArchived"] for r in records) == ITEMS // 2

    again = cli(profile, server, "import", str(tmp_path / "pocket.csv"), "--format", "pocket-csv")
    assert again.stdout.splitlines()[-1].endswith(f"0 created, 0 updated, {ITEMS} unchanged, 1 invalid")

    junk = tmp_path / "notes.txt"
    junk.write_text("not an export\n")
    failed = cli(profile, server, "import", str(junk))
    assert failed.returncode == 1
    assert "import failed: The file is not a recognised export" in failed.stderr
    assert "Traceback" not in failed.stderr


async def test_the_gateway_takes_fifty_mib_on_the_import_route_only(stack: Any, tmp_path: Path) -> None:
    five_mib = b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n" + b"<!-- padding -->\n" * (5 * 1024 * 1024 // 17)
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=120) as http:
        session = (await http.post("/v1/auth/anonymous")).json()
        headers = {"Authorization": f"Bearer {session['accessToken']}"}
        accepted = await http.post("/v1/imports", headers=headers, files={"file": ("big.html", five_mib)})
        assert accepted.status_code == 202, accepted.text

        # A declared length over the route's limit is refused before any byte of the body is read
        # (raw bytes: an HTTP client will not send a head that promises more than it sends).
        status, _, body = await raw_exchange(
            stack.gateway_url,
            raw_request(
                "/v1/imports",
                [
                    ("Authorization", f"Bearer {session['accessToken']}"),
                    ("Content-Type", "multipart/form-data; boundary=x"),
                    ("Content-Length", str(50 * 1024 * 1024 + 1)),
                ],
                method="POST",
            ),
        )
        assert status == 413 and json.loads(body)["code"] == "payload-too-large"

        elsewhere = await http.put(
            "/v1/bookmarks/big-one", headers=headers, json={"url": "https://e.com/", "notes": "n" * (2 * 1024 * 1024)}
        )
        assert elsewhere.status_code == 413
