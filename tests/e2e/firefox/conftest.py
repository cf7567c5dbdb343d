"""Fixtures of the Firefox runs: Debian's Firefox ESR driven over WebDriver BiDi by puppeteer-core, from node
scripts in ``driver/`` that this directory's tests start against the e2e stack of ``tests/e2e/conftest.py``
(docs/decisions/0151-firefox-runs.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

# The sibling helper module, and the extension tests' helpers (the site behind a login), shared rather than copied.
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "extension"))

from extension_support import MembersSite  # noqa: E402
from firefox_support import FIREFOX, Firefox  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.path)).resolve().parent == HERE:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def firefox_driver() -> Path:
    """puppeteer-core installed (``make firefox-driver``: npm ci of this directory's package-lock.json)."""
    if not Path(FIREFOX).exists():
        pytest.skip("the Firefox runs need Debian's firefox-esr at /usr/bin/firefox-esr (.ci/run installs it)")
    subprocess.run(["make", "--no-print-directory", "firefox-driver"], cwd=REPO, check=True)
    return HERE / "driver"


@pytest.fixture
def firefox(firefox_driver: Path, tmp_path: Path) -> Firefox:
    return Firefox(screenshots=tmp_path / "screenshots")


@pytest.fixture(scope="session")
def firefox_extension(firefox_driver: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make extension``, then a copy of the Firefox build for this run, given ``host_permissions`` for
    127.0.0.1 (the test site): the access a person gives the page with the toolbar button (activeTab), which no
    automation can click. The server's permission is still asked by the extension at sign-in."""
    subprocess.run(["make", "--no-print-directory", "extension"], cwd=REPO, check=True)
    target = tmp_path_factory.mktemp("firefox-extension") / "firefox"
    shutil.copytree(REPO / "clients" / "extension" / "dist" / "firefox", target)
    manifest_path = target / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["host_permissions"] = ["http://127.0.0.1/*"]
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return target


@pytest.fixture(scope="session")
def members_site() -> Iterator[MembersSite]:
    site = MembersSite().start()
    yield site
    site.stop()
