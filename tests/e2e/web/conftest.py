"""Browser fixtures of the web app's journeys: one headless Chromium per session, a fresh context per
device (its own IndexedDB, service worker and cookies), against the e2e stack of ``tests/e2e/conftest.py``."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

# The sibling helper module (pytest's importlib mode does not put test directories on sys.path).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from web_support import open_library  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 800}

NewDevice = Callable[..., Awaitable[Any]]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.path)).resolve().parent == Path(__file__).resolve().parent:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    if shutil.which(CHROMIUM) is None:
        pytest.skip("needs Chromium at /usr/bin/chromium")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        await chromium.close()


@pytest.fixture
async def new_device(browser: Any, stack: Any) -> AsyncIterator[NewDevice]:
    """``await new_device()`` → a page of the app in a context of its own (a separate device)."""
    contexts: list[Any] = []

    async def make(*, viewport: dict[str, int] = DESKTOP, color_scheme: str = "light", open_app: bool = True) -> Any:
        context = await browser.new_context(viewport=viewport, color_scheme=color_scheme, base_url=stack.gateway_url)
        contexts.append(context)
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.errors = errors
        if open_app:
            await open_library(page)
        return page

    yield make
    for context in contexts:
        await context.close()
