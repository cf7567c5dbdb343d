"""Running the ``bookmarks`` CLI as a user would, for the full-stack tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def cli(profile: Path, server: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m bookmark_client --server SERVER --profile PROFILE ARGS…``; output captured, bounded in time."""
    return subprocess.run(
        [sys.executable, "-m", "bookmark_client", "--server", server, "--profile", str(profile), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
