"""The refused-claims limit is a setting that can be raised but never turned off."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from auth.settings import Settings


def test_the_limit_defaults_to_ten_refused_claims_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTH_PAIRING_CLAIM_FAILURES_PER_MINUTE", raising=False)
    assert Settings().pairing_claim_failures_per_minute == 10


def test_the_limit_can_be_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTH_PAIRING_CLAIM_FAILURES_PER_MINUTE", "500")
    assert Settings().pairing_claim_failures_per_minute == 500


@pytest.mark.parametrize("value", ["0", "-1"])
def test_the_limit_cannot_be_turned_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("AUTH_PAIRING_CLAIM_FAILURES_PER_MINUTE", value)
    with pytest.raises(ValidationError):
        Settings()
