"""Fixtures of the extension's end-to-end tests (the stack, ``http`` and ``stack`` come from tests/e2e)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

# Sibling helper module (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from extension_support import (  # noqa: E402
    CHROMIUM,
    ExtensionBrowser,
    MembersSite,
    SwitchableProxy,
    Xvfb,
    build_extension,
    chromium_with_extension,
)


@pytest.fixture(scope="session")
def extension_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path(CHROMIUM).exists():
        pytest.skip("the extension's end-to-end tests need Debian's chromium at /usr/bin/chromium")
    return build_extension(tmp_path_factory.mktemp("extension"))


@pytest.fixture(scope="session")
def members_site() -> Iterator[MembersSite]:
    site = MembersSite().start()
    yield site
    site.stop()


@pytest.fixture
async def server_path(stack: Any) -> AsyncIterator[SwitchableProxy]:
    gateway = urlsplit(stack.gateway_url)
    proxy = await SwitchableProxy(gateway.hostname or "127.0.0.1", int(gateway.port or 80)).start()
    yield proxy
    await proxy.stop()


@pytest.fixture
async def browser(extension_dir: Path, tmp_path: Path) -> AsyncIterator[ExtensionBrowser]:
    async with chromium_with_extension(extension_dir, tmp_path / "profile") as extension_browser:
        yield extension_browser


@pytest.fixture(scope="session")
def xvfb() -> Iterator[Xvfb]:
    if not Xvfb.available():
        pytest.skip("no Xvfb (Debian's xvfb package; .ci/run installs it): the toolbar cannot be shown")
    display = Xvfb().start()
    yield display
    display.stop()


@pytest.fixture
async def windowed_browser(extension_dir: Path, tmp_path: Path, xvfb: Xvfb) -> AsyncIterator[ExtensionBrowser]:
    """The browser with a window on a virtual display: its toolbar shows the badge and the real popup."""
    async with chromium_with_extension(extension_dir, tmp_path / "profile", display=xvfb.display) as extension_browser:
        yield extension_browser
