"""docs/api-guide.md, section 11: the collection rules of domain/collections.py, without a database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from bookmarks.domain import collections as rules
from bookmarks.domain.collections import KEEP_PARENT, Collection, CollectionWrite, NestingError

OWNER, OTHER = uuid.uuid4(), uuid.uuid4()
T0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
T1, T2 = T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)


def chain(n: int) -> dict[str, str | None]:
    """c1 <- c2 <- ... <- cn (c1 top level)."""
    return {f"c{i}": (f"c{i - 1}" if i > 1 else None) for i in range(1, n + 1)}


def put(
    live: dict[str, str | None],
    cid: str,
    parent: str | None | object = KEEP_PARENT,
    name: str | None = "N",
    existing: Collection | None = None,
) -> Collection | None:
    return rules.write_collection(
        existing, live, owner=OWNER, collection_id=cid, write=CollectionWrite(name=name, parent_id=parent), position=T1
    )


def stored(cid: str, parent: str | None = None, name: str = "N") -> Collection:
    return Collection(OWNER, cid, name, created_at=T0, updated_at=T0, parent_id=parent)


def test_create_top_level_and_nested() -> None:
    top = put({}, "a")
    assert top is not None and top.parent_id is None and top.created_at == top.updated_at == T1
    child = put({"a": None}, "b", parent="a")
    assert child is not None and child.parent_id == "a"


def test_name_is_required_on_create_only() -> None:
    with pytest.raises(NestingError, match="name"):
        put({}, "a", name=None)
    renamed = put({"a": None, "p": None}, "a", parent="p", name=None, existing=stored("a", name="Old"))
    assert renamed is not None and renamed.name == "Old" and renamed.parent_id == "p"


def test_absent_parent_keeps_the_stored_one_and_null_moves_to_top() -> None:
    live = {"p": None, "a": "p"}
    kept = put(live, "a", name="New", existing=stored("a", parent="p"))
    assert kept is not None and kept.parent_id == "p" and kept.name == "New"
    top = put(live, "a", parent=None, existing=stored("a", parent="p"))
    assert top is not None and top.parent_id is None


def test_identical_put_is_idempotent() -> None:
    assert put({"p": None, "a": "p"}, "a", parent="p", existing=stored("a", parent="p")) is None
    assert put({"a": None}, "a", existing=stored("a")) is None


def test_unknown_or_self_parent_is_refused() -> None:
    with pytest.raises(NestingError):
        put({}, "a", parent="ghost")
    with pytest.raises(NestingError):
        put({"a": None}, "a", parent="a", existing=stored("a"))


def test_moving_under_a_descendant_is_a_cycle() -> None:
    live = chain(4)
    with pytest.raises(NestingError, match="cycle"):
        put(live, "c1", parent="c4", existing=stored("c1"))
    with pytest.raises(NestingError, match="cycle"):
        put(live, "c2", parent="c3", existing=stored("c2", parent="c1"))


def test_ten_levels_are_allowed_an_eleventh_is_not() -> None:
    live = chain(9)
    tenth = put(live, "c10", parent="c9")
    assert tenth is not None
    with pytest.raises(NestingError, match="10"):
        put(chain(10), "c11", parent="c10")


def test_a_move_that_would_make_the_subtree_too_deep_is_refused() -> None:
    live = chain(5) | {"x1": None, "x2": "x1", "x3": "x2", "x4": "x3", "x5": "x4", "x6": "x5"}
    with pytest.raises(NestingError, match="10"):
        put(live, "x1", parent="c5", existing=stored("x1"))  # 5 + 6 levels
    ok = put(live, "x2", parent="c5", existing=stored("x2", parent="x1"))  # 5 + 5 levels
    assert ok is not None


def test_at_most_1000_live_collections() -> None:
    live: dict[str, str | None] = {f"k{i}": None for i in range(1000)}
    with pytest.raises(NestingError, match="1000"):
        put(live, "new")
    assert put(live, "k5", name="Renamed", existing=stored("k5")) is not None  # an existing one may change
    assert put({f"k{i}": None for i in range(999)}, "new") is not None


def test_a_deleted_collection_is_created_again_by_a_put() -> None:
    dead = rules.delete_collection(stored("a", parent="p"), OWNER, "a", T1)
    assert dead is not None and dead.is_deleted
    revived = rules.write_collection(
        dead, {"q": None}, owner=OWNER, collection_id="a", write=CollectionWrite(name="Again"), position=T2
    )
    assert revived is not None and revived.deleted_at is None and revived.updated_at == T2
    assert revived.parent_id is None and revived.name == "Again"  # the old parent is not live any more
    with pytest.raises(NestingError, match="name"):
        rules.write_collection(dead, {}, owner=OWNER, collection_id="a", write=CollectionWrite(name=None), position=T2)


def test_delete_is_idempotent_and_records_unknown_ids() -> None:
    unknown = rules.delete_collection(None, OWNER, "z", T1)
    assert unknown is not None and unknown.deleted_at == T1
    dead = rules.delete_collection(stored("a"), OWNER, "a", T1)
    assert dead is not None and rules.delete_collection(dead, OWNER, "a", T2) is None


def test_children_move_up_and_merges_keep_the_later_record() -> None:
    moved = rules.reparented(stored("b", parent="a"), None, T1)
    assert moved.parent_id is None and moved.updated_at == T1
    older, newer = stored("a"), Collection(OWNER, "a", "Newer", created_at=T0, updated_at=T2)
    assert rules.incoming_wins(None, older) and rules.incoming_wins(older, newer)
    assert not rules.incoming_wins(newer, older) and not rules.incoming_wins(older, older)
    there = rules.moved_to(newer, OTHER, T1)
    assert there.owner_uid == OTHER and there.updated_at == T1 and there.name == "Newer"


def test_rows_round_trip() -> None:
    c = stored("a", parent="p")
    assert Collection.from_row(c.to_row()) == c
