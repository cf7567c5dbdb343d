"""Device pairing, lookup and page capture through the whole platform, from the CLI and the library."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path
from typing import Any

from cli_support import cli

from bookmark_client import BookmarkClient
from devstack.testing import eventually

SECRET = "Intranet report: the lighthouse keepers' union meets on Thursdays behind the boathouse."


async def run(profile: Path, server: str, *args: str) -> Any:
    return await asyncio.to_thread(cli, profile, server, *args)


def user_id(stdout: str) -> str:
    found = re.search(r"signed in as (\S+)", stdout)
    assert found, stdout
    return found.group(1)


async def test_a_paired_device_shares_the_account_and_captures_a_page(stack: Any, tmp_path: Path) -> None:
    server = stack.gateway_url
    first, second, third = tmp_path / "first.sqlite", tmp_path / "second.sqlite", tmp_path / "third.sqlite"
    login = await run(first, server, "login", "--anonymous")
    assert login.returncode == 0, login.stderr
    await run(first, server, "add", "https://example.com/paired", "--id", "paired-1", "--title", "Shared")

    paired = await run(first, server, "pair")

    assert paired.returncode == 0, paired.stderr
    code = re.search(r"pairing code: ([2-9A-Z]{4}-[2-9A-Z]{4}) \(single use, valid until .+ UTC\)", paired.stdout)
    assert code, paired.stdout
    joined = await run(second, server, "login", "--code", code.group(1).lower().replace("-", " "))
    assert joined.returncode == 0, joined.stderr
    assert user_id(joined.stdout) == user_id(login.stdout)
    listed = json.loads((await run(second, server, "list", "--json")).stdout)
    assert [(r["clientBookmarkId"], r["title"]) for r in listed] == [("paired-1", "Shared")]
    again = await run(third, server, "login", "--code", code.group(1))
    assert again.returncode == 1
    assert "invalid-pairing-code" in again.stderr and "Traceback" not in again.stderr

    # The new device captures a page the server could never fetch (the host does not exist).
    assert (await run(second, server, "settings", "--use-ai", "on")).returncode == 0
    page = tmp_path / "report.html"
    page.write_text(f"<html><head><title>Boathouse report</title></head><body><p>{SECRET}</p></body></html>")
    url = f"https://intranet.invalid/reports/{uuid.uuid4().hex}"
    captured = await run(second, server, "capture", url, "--file", str(page))
    assert captured.returncode == 0, captured.stderr
    bookmark_id = re.search(r"captured (\S+): pending", captured.stdout)
    assert bookmark_id, captured.stdout

    async with BookmarkClient(server, store_path=second) as client:

        async def finished() -> Any:
            job = await client.enrichment_status(bookmark_id.group(1))
            return job if job.finished else None

        job = await eventually(finished, timeout=120, interval=0.2)
        assert job.status == "completed", job
        assert job.result is not None and job.result.title == "Boathouse report"

        async def searchable() -> Any:
            return (await client.search("lighthouse keepers union")).results

        hits = await eventually(searchable, timeout=60, interval=0.2)
        assert hits[0].bookmark.client_bookmark_id == bookmark_id.group(1)

    # The first device finds the captured bookmark by any spelling of its URL.
    async with BookmarkClient(server, store_path=first) as client:
        found = await client.lookup(url.replace("https://", "https://www.") + "?utm_source=mail#top")
        assert found is not None and found.client_bookmark_id == bookmark_id.group(1)
        assert await client.lookup("https://example.com/never-saved") is None

    # Capturing the same URL again reuses its bookmark instead of saving a second one.
    recaptured = await run(second, server, "capture", url, "--file", str(page))
    assert recaptured.returncode == 0, recaptured.stderr
    assert f"captured {bookmark_id.group(1)}:" in recaptured.stdout
