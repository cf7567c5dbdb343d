"""Extraction and offline analysis work with no network at all: no model or data downloads at runtime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"

SCRIPT = textwrap.dedent(
    """
    import socket

    def no_network(*args, **kwargs):
        raise OSError("network access attempted while offline")

    # Everything that could open a connection or resolve a name fails loudly from here on.
    socket.socket.connect = no_network
    socket.socket.connect_ex = no_network
    socket.create_connection = no_network
    socket.getaddrinfo = no_network

    import asyncio
    import json
    import sys
    from pathlib import Path

    from enrichment.pipeline import OfflineAnalyzer, build_analyzer, extract_page

    assert isinstance(build_analyzer(openai_api_key=None, openai_base_url=None, model=None), OfflineAnalyzer)
    results = {}
    for path in sorted(Path(sys.argv[1]).glob("*.html")):
        page = extract_page(path.read_text(encoding="utf-8"), base_url="https://example.com/page")
        analysis = asyncio.run(OfflineAnalyzer().analyze(page, existing_tags=["machine learning"]))
        results[path.name] = {"language": page.language, "tags": analysis.tags}
    print(json.dumps(results))
    """
)


def test_pipeline_runs_without_network(tmp_path: Path) -> None:
    env = {
        **os.environ,
        # A fresh home and cache: nothing downloaded earlier can make this pass.
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "NLTK_DATA": str(tmp_path / "nltk"),
        "HF_HUB_OFFLINE": "1",
    }
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(PAGES)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "network access attempted" not in result.stderr
    results = json.loads(result.stdout.strip().splitlines()[-1])
    assert results["og_article.html"]["tags"][0] == "machine learning"
    assert results["japanese_article.html"]["language"] == "ja"
    assert results["german_article.html"]["language"] == "de"
    assert not any((tmp_path / "cache").rglob("*"))  # nothing was cached for later either
