"""The collection tree rules, checked against the local view (pure functions)."""

from __future__ import annotations

import pytest

from bookmark_client.models import Collection
from bookmark_client.tree import MAX_COLLECTIONS, check_parent, collection_names, effective_parent, walk


def c(cid: str, parent: str | None = None, *, name: str | None = None, deleted: bool = False) -> Collection:
    return Collection(id=cid, name=name or cid.upper(), parent_id=parent, deleted=deleted)


def chain(length: int) -> list[Collection]:
    """l1 > l2 > ... > l<length>."""
    return [c(f"l{i}", f"l{i - 1}" if i > 1 else None) for i in range(1, length + 1)]


def test_walk_is_depth_first_with_siblings_by_name() -> None:
    tree = [c("b", name="beta"), c("a", name="Alpha"), c("a2", "a", name="zed"), c("a1", "a", name="Mid")]
    assert [(level, x.id) for level, x in walk(tree)] == [(1, "a"), (2, "a1"), (2, "a2"), (1, "b")]


def test_children_of_a_deleted_collection_show_where_the_server_moves_them() -> None:
    tree = [c("top"), c("gone", "top", deleted=True), c("child", "gone"), c("orphan", "never-seen")]
    by_id = {x.id: x for x in tree}
    assert effective_parent(by_id["child"], by_id) == "top"
    assert effective_parent(by_id["orphan"], by_id) is None
    assert [(level, x.id) for level, x in walk(tree)] == [(1, "orphan"), (1, "top"), (2, "child")]


def test_a_transient_cycle_hides_nothing() -> None:
    tree = [c("x", "y"), c("y", "x"), c("z")]
    assert sorted(x.id for _, x in walk(tree)) == ["x", "y", "z"]


def test_cycles_are_refused() -> None:
    tree = [c("a"), c("b", "a"), c("d", "b")]
    for parent in ("a", "b", "d"):
        with pytest.raises(ValueError, match="into itself"):
            check_parent(tree, "a", parent)
    check_parent(tree, "d", "a")  # moving a leaf up is fine


def test_ten_levels_are_allowed_and_an_eleventh_is_refused() -> None:
    tree = chain(10)
    check_parent(chain(9), "new", "l9")  # becomes level 10
    with pytest.raises(ValueError, match="10 levels"):
        check_parent(tree, "new", "l10")
    check_parent(tree, "l10", "l9")  # re-putting the deepest one where it is stays allowed


def test_subtree_moves_respect_the_depth_limit() -> None:
    tree = [*chain(6), c("a"), c("b", "a"), c("c", "b"), c("d", "c")]  # d is level 4
    # Moving l1 (a six-level subtree) under d would make its leaf level 4 + 6 = 10: allowed.
    check_parent(tree, "l1", "d")
    tree.append(c("e", "d"))  # level 5: 5 + 6 = 11 levels
    with pytest.raises(ValueError, match="10 levels"):
        check_parent(tree, "l1", "e")


def test_unknown_or_deleted_parent_is_refused() -> None:
    tree = [c("a"), c("gone", deleted=True)]
    for parent in ("nope", "gone"):
        with pytest.raises(ValueError, match="does not exist"):
            check_parent(tree, "new", parent)
    check_parent(tree, "new", None)


def test_at_most_a_thousand_collections() -> None:
    tree = [c(f"c{i}") for i in range(MAX_COLLECTIONS)]
    with pytest.raises(ValueError, match="1000"):
        check_parent(tree, "one-more", None)
    check_parent(tree, "c5", None)  # changing an existing one is fine
    check_parent([*tree[1:], c("c0", deleted=True)], "c0", None)  # reviving within the limit too


def test_collection_names_of_a_bookmark() -> None:
    tree = [c("r", name="Reading"), c("gone", deleted=True)]
    assert collection_names(["r", "gone", "not-synced-yet"], {x.id: x for x in tree}) == ["Reading", "not-synced-yet"]
