"""Pure parts of the export: folder order, Netscape nesting, CSV cell safety, JSON shape."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime

import pytest

from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark
from bookmarks.exports.folders import FolderTree
from bookmarks.exports.formats import CsvWriter, JsonWriter, NetscapeWriter, safe_cell
from bookmarks.exports.queries import Document

OWNER = uuid.uuid4()
T0 = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def col(cid: str, name: str, parent: str | None = None, *, deleted: bool = False) -> Collection:
    return Collection(
        owner_uid=OWNER,
        collection_id=cid,
        name=name,
        created_at=T0,
        updated_at=T0,
        parent_id=parent,
        deleted_at=T0 if deleted else None,
    )


def bm(bid: str, *cids: str, **fields: object) -> Bookmark:
    return Bookmark(
        owner_uid=OWNER,
        client_bookmark_id=bid,
        url=f"https://{bid}.example/",
        normalized_url=f"https://{bid}.example/",
        domain=f"{bid}.example",
        created_at=T0,
        updated_at=T0,
        collection_ids=cids,
        **fields,
    )  # type: ignore[arg-type]


def test_folders_come_parents_first_siblings_by_name() -> None:
    tree = FolderTree.of(
        [
            col("z", "zeta"),
            col("b", "Beta", "a"),
            col("a", "alpha"),
            col("c", "child", "b"),
            col("x", "Xeno", "a"),
            col("d", "dead", deleted=True),
            col("o", "orphan", "d"),
        ]
    )
    assert [(f.id, f.depth, f.rank) for f in tree.folders] == [
        ("a", 1, 1),
        ("b", 2, 2),
        ("c", 3, 3),
        ("x", 2, 4),
        ("o", 1, 5),
        ("z", 1, 6),
    ]
    assert tree.by_id()["c"].path == ("alpha", "Beta", "child")


def test_a_parent_cycle_still_lists_every_collection_once() -> None:
    tree = FolderTree.of([col("a", "A", "b"), col("b", "B", "a"), col("r", "Root")])
    assert sorted(f.id for f in tree.folders) == ["a", "b", "r"]
    assert len({f.rank for f in tree.folders}) == 3


def netscape(tree: FolderTree, *batches: list[Bookmark]) -> str:
    writer = NetscapeWriter(tree, is_pro=False, exported_at=T0)
    return writer.head() + "".join(writer.batch(b) for b in batches) + writer.tail()


def test_netscape_opens_each_folder_once_and_closes_every_level() -> None:
    tree = FolderTree.of([col("a", "A"), col("b", "B", "a"), col("c", "C", "b"), col("e", "Empty")])
    # Rows arrive grouped by folder rank (none first), split across batches anywhere.
    text = netscape(tree, [bm("top"), bm("in-a", "a")], [bm("in-c", "nope", "c", "a")])
    assert text.count("<DL><p>") == text.count("</DL><p>") == 5
    lines = [line.strip() for line in text.splitlines()[8:]]
    assert [line[:40] for line in lines if "<H3" in line or "<A " in line or "DL>" in line] == [
        '<DT><A HREF="https://top.example/" ADD_D',
        '<DT><H3 ADD_DATE="1704164645" LAST_MODIF',
        "<DL><p>",
        '<DT><A HREF="https://in-a.example/" ADD_',
        '<DT><H3 ADD_DATE="1704164645" LAST_MODIF',
        "<DL><p>",
        '<DT><H3 ADD_DATE="1704164645" LAST_MODIF',
        "<DL><p>",
        '<DT><A HREF="https://in-c.example/" ADD_',
        "</DL><p>",
        "</DL><p>",
        "</DL><p>",
        '<DT><H3 ADD_DATE="1704164645" LAST_MODIF',
        "<DL><p>",
        "</DL><p>",
        "</DL><p>",
    ]


def test_netscape_escapes_markup_in_every_value() -> None:
    tree = FolderTree.of([col("a", '<script>"x"</script>')])
    b = bm("x", "a", title="</A><script>alert(1)</script>", description="<DT><A HREF=x>", user_tags=('"q"', "a&b"))
    text = netscape(tree, [b])
    assert "<script>" not in text and "<DT><A HREF=x>" not in text
    assert 'TAGS="&quot;q&quot;,a&amp;b"' in text


@pytest.mark.parametrize(
    ("value", "safe"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("a=b", "a=b"),
        ("https://x.example/", "https://x.example/"),
        ("", ""),
    ],
)
def test_csv_cells_that_look_like_formulas_are_prefixed(value: str, safe: str) -> None:
    assert safe_cell(value) == safe


def test_csv_rows_quote_commas_and_newlines() -> None:
    writer = CsvWriter(FolderTree.of([col("a", "A, B")]), is_pro=False, exported_at=T0)
    text = writer.head() + writer.batch([bm("x", "a", title='a, "b"\nc', user_tags=("t1", "t2"))])
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"), newline="")))
    assert rows[1][:6] == ["https://x.example/", 'a, "b"\nc', "", "", "t1|t2", "A, B"]


def test_json_writer_joins_the_documents_into_valid_json_with_and_without_rows() -> None:
    tree = FolderTree.of([col("a", "A")])

    def doc(bid: str) -> Document:
        return Document(bid, json.dumps({"clientBookmarkId": bid, "title": 'a "b"'})[:-1])  # still open

    mark = Document("y", '{"id":"h1","quote":"q"}')
    for batches in ([], [[(doc("x"), [])]], [[(doc("x"), []), (doc("y"), [mark, mark])], [], [(doc("z"), [])]]):
        writer = JsonWriter(tree, is_pro=False, exported_at=T0)
        data = json.loads(writer.head() + "".join(writer.documents(b) for b in batches) + writer.tail())
        assert [b["clientBookmarkId"] for b in data["bookmarks"]] == [
            d.client_bookmark_id for b in batches for d, _ in b
        ]
        assert all(b["title"] == 'a "b"' for b in data["bookmarks"]) and data["collections"][0]["id"] == "a"
        assert [len(b["highlights"]) for b in data["bookmarks"]] == [len(hs) for b in batches for _, hs in b]


def test_csv_columns_cover_every_declared_field_and_a_new_one_follows_under_its_own_name() -> None:
    from bookmarks.domain.model import BOOKMARK_FIELDS
    from bookmarks.exports import formats

    names = {f.name for f in BOOKMARK_FIELDS}
    assert formats.CSV_SHOWN | formats.CSV_LEFT_OUT | set(formats.CSV_EXTRA_FIELDS) == names
    assert not formats.CSV_SHOWN & formats.CSV_LEFT_OUT
    header = next(csv.reader(io.StringIO(formats.CsvWriter(FolderTree([]), is_pro=True, exported_at=T0).head()[1:])))
    assert header == [*formats.CSV_COLUMNS, *formats.CSV_EXTRA_FIELDS]
    assert {"save_why", "deleted_at"} <= formats.CSV_LEFT_OUT


def test_csv_cells_of_each_kind() -> None:
    import enum
    from datetime import date
    from decimal import Decimal

    from bookmarks.exports.formats import _cell

    class Mood(enum.StrEnum):
        CALM = "calm"

    assert [_cell(v) for v in (None, True, date(2026, 1, 2), ("a", "b"), Mood.CALM, Decimal("1.50"), 7)] == [
        "",
        "true",
        "2026-01-02",
        "a|b",
        "calm",
        "1.50",
        "7",
    ]
