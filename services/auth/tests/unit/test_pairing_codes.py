"""Pairing codes: alphabet, shape, what a typed code is read as."""

from __future__ import annotations

import pytest

from auth.domain import pairing
from auth.domain.ratelimit import SlidingWindowLimiter


def test_codes_are_eight_characters_of_the_alphabet_and_differ() -> None:
    codes = {pairing.new_code() for _ in range(2000)}

    assert len(codes) == 2000
    assert all(len(code) == 8 and set(code) <= set(pairing.ALPHABET) for code in codes)
    # Every letter of the alphabet is drawn (2000 × 8 draws from 32 letters).
    assert set("".join(codes)) == set(pairing.ALPHABET)
    assert not set("01IO") & set(pairing.ALPHABET)


def test_display_and_canonical_round_trip() -> None:
    code = pairing.new_code()
    shown = pairing.display(code)

    assert shown == f"{code[:4]}-{code[4:]}"
    assert pairing.canonical(shown) == code
    assert pairing.canonical(f" {shown.lower()} ") == code


@pytest.mark.parametrize("typed", ["", "ABCD-EFG", "ABCD-EFGHJ", "ABCD-EFG1", "ABCD_EFGH", "ÀBCD-EFGH", "ABCD.EFGH"])
def test_anything_else_is_not_a_code(typed: str) -> None:
    assert pairing.canonical(typed) is None


def test_the_hash_is_of_the_canonical_code() -> None:
    assert pairing.hash_code("ABCD2345") != pairing.hash_code("ABCD2346")
    assert len(pairing.hash_code("ABCD2345")) == 32


def test_forget_last_takes_back_one_hit() -> None:
    limiter = SlidingWindowLimiter(limit=2, clock=lambda: 100.0)
    assert limiter.hit("a") is None
    assert limiter.hit("a") is None
    assert limiter.hit("a") is not None

    limiter.forget_last("a")
    limiter.forget_last("unknown")

    assert limiter.hit("a") is None
    assert limiter.hit("a") is not None
