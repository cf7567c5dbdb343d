"""Hostile files: each imports or fails with ImportFormatError, never another exception, and memory
stays bounded (tracemalloc peak) however big the file is. Big inputs are streamed to disk, not built."""

from __future__ import annotations

import io
import random
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bookmarks.imports.formats import FORMATS, ImportFormatError, ImportItem, iter_items

MIB = 1024 * 1024
BIG = 50 * MIB


def write(path: Path, parts: Iterator[bytes]) -> Path:
    with path.open("wb") as fp:
        for part in parts:
            fp.write(part)
    return path


def repeated(block: bytes, total: int) -> Iterator[bytes]:
    """``total`` bytes of ``block`` repeated, streamed in ~1 MiB writes."""
    chunk = block * max(1, MIB // len(block))
    written = 0
    while written < total:
        part = chunk[: total - written]
        written += len(part)
        yield part


def run(path: Path, fmt: str) -> tuple[list[ImportItem], ImportFormatError | None, int]:
    """Items (kept only their first 10), the error if any, and the peak of traced memory."""
    items: list[ImportItem] = []
    error: ImportFormatError | None = None
    tracemalloc.start()
    try:
        with path.open("rb") as fp:
            for item in iter_items(fp, fmt):
                if len(items) < 10:
                    items.append(item)
    except ImportFormatError as exc:
        error = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return items, error, peak


@pytest.mark.parametrize(
    ("fmt", "prefix"),
    [
        ("pocket-csv", b"title,url,time_added,tags,status\n"),
        ("instapaper-csv", b"URL,Title,Selection,Folder,Timestamp\n"),
        ("raindrop-csv", b"id,title,note,excerpt,url,folder,tags,created,cover,highlights,favorite\n"),
        ("json", b'{"version": 1, "bookmarks": [{"url": "https://a.example/", "title": "'),
    ],
)
def test_fifty_mib_of_one_line_fails_clearly_in_bounded_memory(tmp_path: Path, fmt: str, prefix: bytes) -> None:
    path = write(tmp_path / "one-line", iter([prefix, *repeated(b"abcdefgh,", BIG)]))
    items, error, peak = run(path, fmt)
    assert items == []
    assert error is not None and "longer than 1,048,576 characters" in str(error)
    assert peak < 16 * MIB


def test_fifty_mib_of_one_line_after_good_records_keeps_the_good_ones(tmp_path: Path) -> None:
    head = b"title,url,time_added,tags,status\nA,https://a.example/,1,,unread\nB,https://b.example/,1,,unread\n"
    path = write(tmp_path / "tail.csv", iter([head, *repeated(b"x", BIG)]))
    items, error, peak = run(path, "pocket-csv")
    assert [item.url for item in items] == ["https://a.example/", "https://b.example/"]
    assert error is not None and "The record starting at line 4 is longer" in str(error)
    assert peak < 16 * MIB


def test_a_fifty_mib_title_on_one_line_of_a_netscape_file_imports_cut_short(tmp_path: Path) -> None:
    head = b'<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p><DT><A HREF="https://a.example/" ADD_DATE="1">'
    tail = b'</A><DT><A HREF="https://b.example/">b</A></DL>'
    path = write(tmp_path / "title.html", iter([head, b"Title &amp; ", *repeated(b"more title text ", BIG), tail]))
    items, error, peak = run(path, "netscape")
    assert error is None
    assert [item.url for item in items] == ["https://a.example/", "https://b.example/"]
    assert items[0].title is not None and items[0].title.startswith("Title & more title text")
    assert len(items[0].title) <= 1000
    assert items[0].warnings == ("title shortened to 1000 characters",)
    assert peak < 16 * MIB


def test_an_unterminated_fifty_mib_netscape_tag_fails_clearly(tmp_path: Path) -> None:
    path = write(tmp_path / "tag.html", iter([b'<DL><p><DT><A HREF="https://a.example/', *repeated(b"a", BIG)]))
    items, error, peak = run(path, "netscape")
    assert error is not None and "a tag or comment runs on for more than" in str(error)
    assert peak < 16 * MIB


def test_many_bookmarks_on_a_single_line_are_streamed_not_read_whole(tmp_path: Path) -> None:
    record = b'<DT><A HREF="https://a.example/p" ADD_DATE="1700000000" TAGS="x,y">A bookmark</A>'
    count = 10_000
    path = write(tmp_path / "minified.html", iter([b"<DL><p>", record * count, b"</DL>"]))
    with path.open("rb") as fp:
        items = iter_items(fp, "netscape")
        first = next(items)
        assert fp.tell() <= 2 * 64 * 1024 < path.stat().st_size  # the first item came from the first chunks
        rest = sum(1 for item in items if item.valid and item.line == 1)
    assert first.line == 1 and first.user_tags == ("x", "y")
    assert rest == count - 1


def test_a_csv_header_with_a_million_columns_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "wide.csv", iter([b"title,url", *repeated(b",c", 2_000_000), b"\nT,https://a.example/\n"]))
    items, error, peak = run(path, "pocket-csv")
    assert items == []
    assert error is not None and "longer than 1,048,576 characters" in str(error)
    assert peak < 16 * MIB


def test_a_csv_header_with_many_short_columns_is_refused_by_count() -> None:
    data = b"title,url," + b",".join(b"c%d" % n for n in range(100)) + b"\nT,https://a.example/\n"
    with pytest.raises(ImportFormatError, match="The CSV header has 102 columns"):
        list(iter_items(io.BytesIO(data), "pocket-csv"))


def test_a_csv_record_with_a_million_columns_imports_its_known_columns(tmp_path: Path) -> None:
    path = write(
        tmp_path / "wide-row.csv",
        iter([b"title,url,time_added,tags,status\nT,https://a.example/,1,,unread", b"," * 1_000_000, b"\n"]),
    )
    items, error, peak = run(path, "pocket-csv")
    assert error is None
    assert [(item.url, item.title, item.is_archived) for item in items] == [("https://a.example/", "T", False)]
    assert peak < 48 * MIB  # the csv module builds the row (a list of a million references) before we see it


def test_ten_thousand_nested_folders(tmp_path: Path) -> None:
    # Memory does not depend on the depth (levels past the 12th are only counted); 10,000 keeps the test
    # quick on a loaded machine, test_netscape.py checks the cut at 14 levels.
    depth = 10_000
    parts = [
        b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<H1>Bookmarks</H1>\n<DL><p>\n",
        *repeated(b"<DT><H3>Nested</H3>\n<DL><p>\n", depth * len(b"<DT><H3>Nested</H3>\n<DL><p>\n")),
        b'<DT><A HREF="https://deep.example/">deep</A>\n',
        *repeated(b"</DL><p>\n", depth * len(b"</DL><p>\n")),
        b'<DT><A HREF="https://shallow.example/">shallow</A>\n</DL>\n',
    ]
    path = write(tmp_path / "deep.html", iter(parts))
    items, error, peak = run(path, "netscape")
    assert error is None
    deep, shallow = items
    assert deep.collection_path == ("Nested",) * 10
    assert deep.warnings == ("folder nested 10000 levels deep; kept its first 10 levels",)
    assert deep.line == 3 + 2 * depth + 1
    assert shallow.collection_paths == ()  # every level was closed again
    assert peak < 16 * MIB


def test_json_nested_a_hundred_thousand_levels_fails_clearly(tmp_path: Path) -> None:
    path = write(
        tmp_path / "deep.json", iter([b'{"version": 1, "bookmarks": [', b"[" * 100_000, b"]" * 100_000, b"]}"])
    )
    items, error, _ = run(path, "json")
    assert items == []
    assert error is not None and "nested too deeply" in str(error)


@pytest.mark.parametrize("fmt", ["auto", *FORMATS])
def test_garbage_bytes_in_every_format(tmp_path: Path, fmt: str) -> None:
    rng = random.Random(14)
    path = write(tmp_path / "garbage.bin", iter([rng.randbytes(MIB)]))
    items, error, peak = run(path, fmt)
    assert error is not None or all(not item.valid for item in items)
    assert peak < 32 * MIB


@pytest.mark.parametrize(
    ("fmt", "builder"),
    [
        ("netscape", lambda: b"<DL>" + b'<DT><A HREF="\x00\xff">\xfe</A>' * 10 + b"</DL>"),
        ("pocket-csv", lambda: b'title,url\n\x00,\xff\xfe\n"""\n'),
        (
            "json",
            lambda: (
                b'{"version": 1, "bookmarks": [{"url": "\\ud800"}, {"url": 5}, {"url": "https://a.example/", "userTags": "x"}]}'
            ),
        ),
    ],
)
def test_odd_bytes_become_invalid_items_not_crashes(fmt: str, builder: Callable[[], bytes]) -> None:
    items = list(iter_items(io.BytesIO(builder()), fmt))
    assert items and all(item.reason for item in items)


@pytest.mark.parametrize("opening", [b"<script>", b"<!-- a comment that never ends ", b"<style>"])
def test_an_unterminated_comment_or_script_block_fails_clearly(tmp_path: Path, opening: bytes) -> None:
    head = b'<DL><p><DT><A HREF="https://a.example/">a</A>\n'
    path = write(tmp_path / "open.html", iter([head, opening, *repeated(b"<p>text</p>", 8 * MIB)]))
    _, error, peak = run(path, "netscape")
    assert error is not None and "runs on for more than 1,048,576 characters" in str(error)
    assert peak < 16 * MIB


def _big_file(tmp_path: Path, fmt: str, count: int) -> Path:
    if fmt == "pocket-csv":
        head, row, tail = (
            b"title,url,time_added,tags,status\n",
            b'"T, t",https://a.example/p,1700000000,a|b,unread\r\n',
            b"",
        )
    elif fmt == "raindrop-csv":
        head = b"id,title,note,excerpt,url,folder,tags,created,cover,highlights,favorite\n"
        row, tail = b'1,T,"n\nn",e,https://a.example/p,A/B,"x, y",2023-08-09T12:34:56.789Z,,,false\n', b""
    elif fmt == "instapaper-csv":
        head, row, tail = b"URL,Title,Selection,Folder,Timestamp\n", b"https://a.example/p,T,,Archive,1700000000\n", b""
    elif fmt == "json":
        head, tail = b'{"version": 1, "collections": [], "bookmarks": [\n', b'{"url": "https://a.example/end"}]}'
        row = b'{"url": "https://a.example/p", "title": "T", "userTags": ["a"], "isArchived": true},\n'
    else:
        head, row, tail = b"<DL><p>\n", b'<DT><A HREF="https://a.example/p" TAGS="a">T</A>\n', b"</DL>\n"
    return write(tmp_path / f"big.{fmt}", iter([head, *repeated(row, len(row) * count), tail]))


@pytest.mark.parametrize("fmt", ["netscape", "pocket-csv", "instapaper-csv", "raindrop-csv", "json"])
def test_big_files_are_read_as_a_stream(tmp_path: Path, fmt: str) -> None:
    path = _big_file(tmp_path, fmt, 60_000)
    with path.open("rb") as fp:
        items = iter_items(fp, fmt)
        first = next(items)
        assert first.valid and first.url == "https://a.example/p"
        assert fp.tell() <= 2 * 64 * 1024 < path.stat().st_size


@pytest.mark.parametrize("charset", [b"zlib", b"base64", b"rot13", b"hex", b"no-such-charset", b"utf-16"])
def test_a_meta_charset_that_is_no_text_encoding_is_ignored(charset: bytes) -> None:
    data = (
        b'<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset='
        + charset
        + b'">\n<DL><DT><A HREF="https://a.example/">caf\xc3\xa9</A></DL>'
    )
    [item] = list(iter_items(io.BytesIO(data), "auto"))
    assert (item.url, item.title) == ("https://a.example/", "café")


def test_a_json_integer_with_ten_thousand_digits_fails_clearly() -> None:
    data = b'{"version": 1, "bookmarks": [{"url": "https://a.example/", "n": ' + b"9" * 10_000 + b"}]}"
    with pytest.raises(ImportFormatError, match="Invalid JSON at line 1"):
        list(iter_items(io.BytesIO(data), "json"))


def test_dates_at_the_edge_of_the_calendar_are_dropped_not_crashing() -> None:
    data = b'{"version": 1, "bookmarks": [{"url": "https://a.example/", "clientSavedAt": "0001-01-01T00:00:00+01:00", "lastOpenedAt": "9999-12-31T23:59:59-01:00"}]}'
    [item] = list(iter_items(io.BytesIO(data), "json"))
    assert (item.saved_at, item.last_opened_at, item.valid) == (None, None, True)
