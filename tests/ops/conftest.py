"""Fixtures of the ops tests (chart, images, monitoring)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

# Sibling helper modules (_support, exported_metrics, promql): pytest runs with
# --import-mode=importlib, which does not put test directories on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import CHART, find_tool  # noqa: E402


@pytest.fixture(scope="session")
def helm() -> str:
    path = find_tool("helm")
    if path is None:
        pytest.skip("helm not installed (run deploy/install-tools.sh)")
    return str(path)


@pytest.fixture(scope="session")
def render(helm: str) -> Callable[..., list[dict[str, Any]]]:
    """`helm template` of the chart with extra arguments; the rendered objects, or RuntimeError."""

    def _render(*args: str) -> list[dict[str, Any]]:
        result = subprocess.run(
            [helm, "template", "bookmarks", str(CHART), "--namespace", "bookmarks", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(result.stderr)
        return [d for d in yaml.safe_load_all(result.stdout) if d]

    return _render
