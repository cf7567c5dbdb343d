"""Pairing codes: short, single-use codes that let a second device join an account; no I/O.

A code is 8 characters from a 32-letter alphabet without look-alikes (no 0/O, no 1/I), 40 random bits,
shown as ``XXXX-XXXX``. Only its SHA-256 is stored (docs/decisions/0070-pairing-codes-hashed.md).
"""

from __future__ import annotations

import hashlib
import secrets

ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
CODE_LENGTH = 8
TTL_SECONDS = 300
MAX_LIVE_CODES = 5
# A claim body's code longer than this is not a typo of a code but something else entirely.
MAX_CLAIM_LENGTH = 64

_ALLOWED = frozenset(ALPHABET)
_IGNORED = str.maketrans("", "", "- \t\r\n")


def new_code() -> str:
    """A fresh code (8 characters, no dash)."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def display(code: str) -> str:
    """``ABCD2345`` → ``ABCD-2345``: how people read and type it."""
    half = CODE_LENGTH // 2
    return f"{code[:half]}-{code[half:]}"


def canonical(typed: str) -> str | None:
    """The code a person typed, with dashes, spaces and case ignored; None when it cannot be a code."""
    code = typed.translate(_IGNORED).upper()
    if len(code) != CODE_LENGTH or not set(code) <= _ALLOWED:
        return None
    return code


def hash_code(code: str) -> bytes:
    """What the database keeps of a canonical code."""
    return hashlib.sha256(code.encode("ascii")).digest()
