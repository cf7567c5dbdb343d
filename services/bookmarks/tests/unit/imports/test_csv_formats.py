"""Pocket, Instapaper and Raindrop CSV exports in their real layouts."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bookmarks.imports.formats import ImportFormatError, ImportItem, iter_items
from bookmarks.imports.formats.model import ImportHighlight
from bookmarks.imports.formats.text import BoundedLines

FIXTURES = Path(__file__).parent / "fixtures"


def parse(data: bytes, fmt: str) -> list[ImportItem]:
    return list(iter_items(io.BytesIO(data), fmt))


def test_pocket_export_quoted_commas_newlines_crlf_tags_status_and_dates() -> None:
    data = (FIXTURES / "pocket.csv").read_bytes()
    assert b"\r\n" in data
    items = parse(data, "pocket-csv")
    assert [item.line for item in items] == [2, 3, 4, 5, 7, 8, 9]
    great, lists, untitled, multi, unicode, pocket_scheme, no_url = items
    assert great.title == "How to Do Great Work"
    assert great.user_tags == ("essays", "careers")
    assert great.is_archived is True
    assert great.saved_at == datetime.fromtimestamp(1689000000, tz=UTC)
    assert lists.title == "Lists, sets, and dicts: a tour"
    assert lists.user_tags == ("python", "learning")
    assert lists.is_archived is False
    assert untitled.title is None  # Pocket wrote the URL as the title
    assert untitled.user_tags == ()
    assert multi.title == 'A title with a\r\nline break and "quotes"'
    assert multi.user_tags == ("long read",)
    assert unicode.url == "https://ja.example.jp/東京" and unicode.user_tags == ("travel", "日本")
    assert pocket_scheme.reason == "URL must start with http:// or https://."
    assert no_url.reason == "The record has no URL." and no_url.line == 9
    assert all(item.valid for item in items[:5])


def test_instapaper_folders_become_states_or_collections() -> None:
    items = parse((FIXTURES / "instapaper.csv").read_bytes(), "instapaper-csv")
    assert [item.line for item in items] == [2, 4, 5, 6, 7]
    unread, archived, starred, folder, private = items
    assert unread.title == "A Story, Told Slowly"
    assert unread.description == "The first paragraph, with commas,\nand a second line."
    assert (unread.is_archived, unread.is_favorite, unread.collection_paths) == (False, None, ())
    assert (archived.is_archived, archived.user_tags) == (True, ("history", "war"))
    assert (starred.is_favorite, starred.is_archived, starred.collection_paths) == (True, None, ())
    assert folder.collection_paths == (("Programming",),) and folder.user_tags == ("rust",)
    assert folder.saved_at == datetime.fromtimestamp(1700000300, tz=UTC)
    assert private.reason is not None  # Instapaper's own emailed items have no web URL


def test_instapaper_without_the_tags_column_and_with_comma_tags() -> None:
    data = b"URL,Title,Selection,Folder,Timestamp\nhttps://a.example/,A,,Unread,1\n"
    [item] = parse(data, "instapaper-csv")
    assert item.user_tags == () and item.valid
    data = b'URL,Title,Selection,Folder,Timestamp,Tags\nhttps://a.example/,A,,Unread,1,"x, y"\n'
    assert parse(data, "instapaper-csv")[0].user_tags == ("x", "y")


def test_raindrop_export_with_bom_nested_folders_tags_highlights_and_favorites() -> None:
    items = parse((FIXTURES / "raindrop.csv").read_bytes(), "raindrop-csv")
    assert [item.line for item in items] == [2, 3, 4]
    sqla, inbox, hike = items
    assert sqla.title == "SQLAlchemy 2.0 Tutorial"
    assert sqla.notes == "My note, with a comma"
    assert sqla.highlights == (ImportHighlight(quote="use the Core for bulk work"),)
    assert sqla.description == "The unified tutorial, for Core and ORM."
    assert sqla.collection_path == ("Dev", "Python", "Databases")
    assert sqla.user_tags == ("python", "sql", "orm")
    assert sqla.saved_at == datetime(2023, 8, 9, 12, 34, 56, 789000, tzinfo=UTC)
    assert sqla.is_favorite is True
    assert sqla.thumbnail_url == "https://docs.sqlalchemy.org/en/20/_static/logo.png"
    assert inbox.collection_paths == () and inbox.is_favorite is False
    assert hike.description == "Trail notes\nspanning two lines"
    assert hike.collection_path == ("Travel",)


def test_columns_are_found_by_name_in_any_order() -> None:
    data = b"status,tags,url,title,time_added,extra\narchive,a,https://a.example/,T,1700000000,zzz\n"
    [item] = parse(data, "pocket-csv")
    assert (item.title, item.user_tags, item.is_archived) == ("T", ("a",), True)


def test_short_rows_blank_lines_and_unknown_status() -> None:
    data = b"title,url,time_added,tags,status\n\n,https://a.example/\n\nT,https://b.example/,x,,weird\n"
    items = parse(data, "pocket-csv")
    assert [(item.line, item.url, item.is_archived, item.saved_at) for item in items] == [
        (3, "https://a.example/", None, None),
        (5, "https://b.example/", None, None),
    ]


@pytest.mark.parametrize("fmt", ["pocket-csv", "instapaper-csv", "raindrop-csv"])
def test_a_header_without_a_url_column_is_refused(fmt: str) -> None:
    with pytest.raises(ImportFormatError, match="lacks the column"):
        parse(b"name,link\nx,https://a.example/\n", fmt)


def test_an_unterminated_quote_swallows_the_rest_into_one_invalid_record_at_its_line() -> None:
    data = (
        b'title,url,time_added,tags,status\n"ok",https://a.example/,1,,unread\n"broken,https://b.example/,1,,unread\n'
        + b"x,y\n" * 10
    )
    items = parse(data, "pocket-csv")
    assert [(item.line, item.url, item.reason) for item in items] == [
        (2, "https://a.example/", None),
        (3, "", "The record has no URL."),
    ]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending_with_quoted_line_breaks(eol: bytes) -> None:
    row = b'"a title, quoted",https://a.example/p,1700000000,"x|y",archive' + eol
    quoted = b'"two' + eol + b'lines",https://b.example/,1,,unread' + eol
    data = b"title,url,time_added,tags,status" + eol + row * 1000 + quoted
    items = parse(data, "pocket-csv")
    assert len(items) == 1001
    assert items[999].line == 1001 and items[999].user_tags == ("x", "y")
    assert (items[1000].line, items[1000].title) == (1002, "two" + eol.decode() + "lines")


def test_a_crlf_split_between_two_read_chunks_is_one_line_ending() -> None:
    lines = BoundedLines(["a,b\r", "\nc,d\r", "e,f\r\n", "g\r"])
    assert list(lines) == ["a,b\r\n", "c,d\r", "e,f\r\n", "g\r"]
