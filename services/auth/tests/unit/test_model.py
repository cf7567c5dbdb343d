"""Identity claims → profile; the API shape of a user."""

from __future__ import annotations

import uuid

import pytest

from auth.domain.model import User, identity_from_claims
from common.errors import InvalidIdentityToken


def test_profile_comes_from_name_email_picture() -> None:
    identity = identity_from_claims(
        "idp-a",
        {"sub": "123", "name": " Ada ", "email": "ada@example.com", "picture": "https://x.test/a.png"},
    )

    assert (identity.provider, identity.subject) == ("idp-a", "123")
    assert (identity.display_name, identity.email, identity.photo_url) == (
        "Ada",
        "ada@example.com",
        "https://x.test/a.png",
    )


def test_missing_or_odd_profile_claims_become_null() -> None:
    identity = identity_from_claims(
        "idp-b", {"sub": "s", "name": 5, "email": "no-at-sign", "picture": "javascript:alert(1)"}
    )

    assert (identity.display_name, identity.email, identity.photo_url) == (None, None, None)


def test_oversized_claims_are_cut_or_dropped() -> None:
    identity = identity_from_claims(
        "idp-a",
        {"sub": "s", "name": "n" * 5000, "email": "e" * 400 + "@x.test", "picture": "https://x.test/" + "p" * 3000},
    )

    assert identity.display_name == "n" * 256
    assert identity.email is None
    assert identity.photo_url is None


def test_profile_claims_with_nul_are_dropped() -> None:
    identity = identity_from_claims(
        "idp-a", {"sub": "s", "name": "Ada\u0000", "email": "a\u0000@x.test", "picture": "https://x.test/\u0000"}
    )

    assert (identity.display_name, identity.email, identity.photo_url) == (None, None, None)


@pytest.mark.parametrize("sub", [None, "", "   ", 42, "s" * 256, "a\u0000b", "a\ud800b"])
def test_a_token_without_a_usable_subject_is_invalid(sub: object) -> None:
    with pytest.raises(InvalidIdentityToken):
        identity_from_claims("idp-a", {"sub": sub})


def test_user_api_shape_leaves_settings_out() -> None:
    user_id = uuid.uuid4()
    user = User(id=user_id, is_anonymous=True, display_name=None, email=None, photo_url=None, is_pro=False, use_ai=True)

    assert user.to_api() == {
        "id": str(user_id),
        "isAnonymous": True,
        "displayName": None,
        "email": None,
        "photoUrl": None,
        "isPro": False,
    }
    event = user.updated_event()
    assert (event.userId, event.isAnonymous, event.isPro, event.useAi) == (user_id, True, False, True)
    assert event.topic == "user.updated" and event.key == str(user_id)
