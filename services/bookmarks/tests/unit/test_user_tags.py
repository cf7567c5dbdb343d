"""docs/api-guide.md, section 11: the userTags rule."""

from __future__ import annotations

import pytest

from bookmarks.domain.tags import normalize_user_tags


def test_trims_dedupes_case_insensitively_keeping_first_spelling_and_order() -> None:
    assert normalize_user_tags(["  Rust ", "go", "rust", "GO", "Émile", "émile", "ß", "SS"]) == (
        "Rust",
        "go",
        "Émile",
        "ß",
    )


def test_empty_list_and_emoji_sequences_are_fine() -> None:
    assert normalize_user_tags([]) == ()
    assert normalize_user_tags(["👩‍💻 work"]) == ("👩‍💻 work",)  # the zero-width joiner is not a control


@pytest.mark.parametrize(
    "items",
    [[""], ["   "], [1], [None], ["a" * 65], ["a\nb"], ["a\x00"], ["\x7f"], ["tab\there"], ["\ud800"]],
)
def test_bad_tags_are_refused_not_dropped(items: list[object]) -> None:
    with pytest.raises(ValueError):
        normalize_user_tags(items)


def test_at_most_50_distinct_tags() -> None:
    fifty = [f"t{i}" for i in range(50)]
    assert len(normalize_user_tags(fifty + ["T0", " t1 "])) == 50  # duplicates do not count
    with pytest.raises(ValueError, match="50"):
        normalize_user_tags([*fifty, "t50"])
    assert normalize_user_tags(["a" * 64]) == ("a" * 64,)
