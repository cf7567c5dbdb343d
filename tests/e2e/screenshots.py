"""Where the browser tests write their screenshots.

``make screenshots`` sets ``SCREENSHOTS_DIR`` to ``docs/screenshots`` (the pictures the docs show); any other
run writes them to a temporary directory, so a plain ``make test`` leaves the working tree as it was.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def screenshots_dir() -> Path:
    configured = os.environ.get("SCREENSHOTS_DIR")
    path = Path(configured) if configured else Path(tempfile.gettempdir()) / "bookmarks-screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path
