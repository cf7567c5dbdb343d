"""The reference client refuses exactly the ids the server refuses: its copy of the id rule is the one
every service validates with."""

from __future__ import annotations

import re
from pathlib import Path

from bookmark_client.fields import ID_PATTERN
from common.validation import CLIENT_ID_PATTERN


def test_the_client_copy_of_the_id_pattern_is_the_servers() -> None:
    assert ID_PATTERN.pattern == CLIENT_ID_PATTERN


def test_the_api_guide_documents_the_same_pattern() -> None:
    guide = (Path(__file__).resolve().parents[4] / "docs" / "api-guide.md").read_text()
    documented = set(re.findall(r"`(\^\[[^`]+\$)`", guide))
    assert documented == {CLIENT_ID_PATTERN}
