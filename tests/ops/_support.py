"""Paths and tool lookup shared by the ops tests."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CHART = REPO_ROOT / "deploy" / "helm" / "bookmarks-platform"
PRODUCTION_VALUES = REPO_ROOT / "deploy" / "helm" / "ci" / "production-values.yaml"


def find_tool(name: str) -> str | None:
    """A tool from <repo>/.tools/bin (deploy/install-tools.sh), else from PATH."""
    local = REPO_ROOT / ".tools" / "bin" / name
    if local.exists():
        return str(local)
    return shutil.which(name)
