"""Link previews through the gateway: a pasted link gets its page's title and picture, for any user,
with the AI off; the picture is served by the platform; the CLI's `add` fills what the user left empty."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
from e2e_support import LOAF_PNG, LocalSite, expect, sign_in
from PIL import Image

from devstack.testing import LocalJwksServer

TITLE = "Crusty loaves for beginners"


def cli(profile: Path, server: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bookmark_client", "--server", server, "--profile", str(profile), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_a_preview_through_the_gateway_with_the_ai_off(
    http: httpx.AsyncClient, idp_a: LocalJwksServer, site: LocalSite
) -> None:
    url = site.add_article(TITLE, description="Bread with a crackling crust, step by step.")
    device = await sign_in(http, idp_a, f"preview-{uuid.uuid4().hex}")  # useAi stays off

    assert (await http.get("/v1/previews", params={"url": url})).status_code == 401
    data = expect(await device.request("GET", "/v1/previews", params={"url": url}), 200).json()["data"]
    assert (data["title"], data["description"]) == (TITLE, "Bread with a crackling crust, step by step.")
    assert data["imageUrl"].startswith("/v1/previews/images/")

    picture = expect(await http.get(data["imageUrl"]), 200)  # no token: what an <img> does
    assert picture.headers["content-type"] == "image/webp"
    assert Image.open(io.BytesIO(picture.content)).size == Image.open(io.BytesIO(LOAF_PNG)).size
    assert "127.0.0.1:" + str(site.port) not in picture.text + str(data["imageUrl"])

    bad = await device.request("GET", "/v1/previews", params={"url": "ftp://example.com/"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid-url"


def test_cli_add_fills_title_description_and_picture_unless_given(stack: Any, site: LocalSite, tmp_path: Path) -> None:
    profile, server = tmp_path / "cli.sqlite", stack.gateway_url
    assert cli(profile, server, "login", "--anonymous").returncode == 0
    url = site.add_article(TITLE, description="Bread with a crackling crust, step by step.")

    added = cli(profile, server, "add", url, "--id", "bread")
    assert added.returncode == 0, added.stderr
    assert f"title: {TITLE}" in added.stdout
    mine = cli(profile, server, "add", site.add_article("Another loaf"), "--id", "mine", "--title", "My own name")
    assert mine.returncode == 0, mine.stderr

    listed = cli(profile, server, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    records = {r["clientBookmarkId"]: r for r in json.loads(listed.stdout)}
    record = records["bread"]
    assert record["title"] == TITLE
    assert record["description"] == "Bread with a crackling crust, step by step."
    assert record["thumbnailUrl"].startswith("/v1/previews/images/")
    own = records["mine"]
    assert own["title"] == "My own name"
    assert own["description"] is None and own["thumbnailUrl"] is None  # --title: no preview asked
