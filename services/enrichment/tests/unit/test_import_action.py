"""What enrichment does for a bookmark an import created (docs/api-guide.md, section 13)."""

from __future__ import annotations

import pytest

from enrichment.domain.model import import_action


@pytest.mark.parametrize(
    ("known", "use_ai", "is_pro", "cached", "action"),
    [
        (True, True, True, True, "cache"),
        (True, True, False, True, "cache"),  # cached: at once, nothing charged, free or Pro
        (True, True, True, False, "bulk"),  # Pro with AI on: a low-priority job
        (True, True, False, False, "none"),  # free: nothing queued (they enqueue within their quota)
        (True, False, True, True, "none"),  # no AI consent: nothing at all
        (False, False, False, True, "none"),  # user not projected here yet: nothing
    ],
)
def test_import_action(known: bool, use_ai: bool, is_pro: bool, cached: bool, action: str) -> None:
    assert import_action(known=known, use_ai=use_ai, is_pro=is_pro, cached=cached) == action
