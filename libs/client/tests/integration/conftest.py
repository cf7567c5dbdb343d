"""Integration fixtures of the client.

``full_stack`` (devstack.pytest_plugin) runs the whole platform. Two devices of one user need an
identity both can sign in with (an anonymous account lives on one device only): identity provider A
is played by the plugin's ``idp_a`` fixture, which ``full_stack`` always trusts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

# The in-memory fake service of the unit tests, reused by the loopback WebSocket tests (pytest runs with
# --import-mode=importlib, which does not put test directories on sys.path).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # cli_support


@pytest.fixture
def stack(full_stack: Any) -> Any:
    """The whole platform; it trusts ``idp_a`` (devstack.pytest_plugin) as identity provider A."""
    return full_stack
