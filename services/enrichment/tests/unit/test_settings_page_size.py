"""ENRICHMENT_MAX_PAGE_BYTES: the decoded page cap the worker's fetcher uses."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from enrichment.settings import Settings


def test_default_is_five_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENRICHMENT_MAX_PAGE_BYTES", raising=False)
    assert Settings().max_page_bytes == 5 * 1024 * 1024


def test_configurable_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENRICHMENT_MAX_PAGE_BYTES", "1048576")
    assert Settings().max_page_bytes == 1024 * 1024
    for bad in ("0", "1024", str(65 * 1024 * 1024), "5MiB"):
        monkeypatch.setenv("ENRICHMENT_MAX_PAGE_BYTES", bad)
        with pytest.raises(ValidationError):
            Settings()
