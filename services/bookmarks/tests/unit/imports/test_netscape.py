"""Netscape bookmark files as browsers and services really write them."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

from bookmarks.imports.formats import ImportItem, iter_items

FIXTURES = Path(__file__).parent / "fixtures"


def parse(data: bytes) -> list[ImportItem]:
    return list(iter_items(io.BytesIO(data), "netscape"))


def by_url(items: list[ImportItem]) -> dict[str, ImportItem]:
    return {item.url: item for item in items}


def test_firefox_export_folders_entities_tags_dates_and_descriptions() -> None:
    items = parse((FIXTURES / "firefox.html").read_bytes())
    assert [item.line for item in items] == [12, 13, 17, 19, 23, 28, 30, 35]
    found = by_url(items)
    creme = found["https://cooking.example/cr%C3%A8me-br%C3%BBl%C3%A9e?ref=nav&lang=fr"]
    assert creme.title == 'Crème brûlée – the "classic" way'
    assert creme.description == "Custard & caramel, done right."
    assert creme.user_tags == ("dessert", "french")
    assert creme.collection_path == ("Recipes & Cooking",)
    assert creme.saved_at == datetime.fromtimestamp(1651000000, tz=UTC)
    assert creme.valid
    # the H1 is the root, not a folder; every H3 is, the browser's own ones included
    assert found["https://www.mozilla.org/en-US/firefox/central/"].collection_paths == ()
    assert found["https://news.ycombinator.com/"].collection_path == ("Bookmarks Toolbar",)
    csv_docs = found["https://docs.python.org/3/library/csv.html"]
    assert csv_docs.collection_path == ("Bookmarks Toolbar", "Dev", "Python")
    assert csv_docs.user_tags == ("python", "docs")  # case-insensitive duplicate dropped
    assert found["https://example.org/it's-a-path"].collection_path == ("Other Bookmarks",)
    assert found["https://example.org/it's-a-path"].title == "It's a path"
    # a folder's <DD> is not a bookmark's description; the bookmark after it has none
    assert found["https://cooking.example/ramen"].description is None
    assert found["https://cooking.example/ramen"].title == "Tonkotsu ramen (豚骨ラーメン)"


def test_non_http_bookmarks_are_invalid_with_a_reason_and_the_rest_imports() -> None:
    items = parse((FIXTURES / "firefox.html").read_bytes())
    invalid = [item for item in items if not item.valid]
    assert [item.url[:6] for item in invalid] == ["place:", "javasc"]
    assert all(item.reason and "http" in item.reason for item in invalid)
    assert invalid[1].collection_path == ("Bookmarks Toolbar", "Dev")
    assert sum(item.valid for item in items) == 6


def test_chrome_export_with_windows_line_endings() -> None:
    data = (FIXTURES / "chrome_crlf.html").read_bytes()
    assert b"\r\n" in data
    items = parse(data)
    assert [(item.line, item.collection_path) for item in items] == [
        (11, ("Bookmarks bar",)),
        (14, ("Bookmarks bar", "Work")),
        (19, ("Other bookmarks",)),
    ]
    assert items[0].title == "Inbox (3) - mail"
    assert items[1].url == "https://jira.example.com/browse/PRJ-1?utm_source=x&gclid=abc"
    assert items[1].saved_at == datetime.fromtimestamp(1690000006, tz=UTC)  # milliseconds scaled down


def test_windows_1252_export_decoded_by_its_meta_charset() -> None:
    items = parse((FIXTURES / "legacy_cp1252.html").read_bytes())
    assert [item.title for item in items] == [
        "Le Monde – Actualités et Infos en France et dans le monde",
        "Café “crème” €5",
    ]
    assert items[0].collection_path == ("Liens français",)
    assert items[1].url == "http://www.example.fr/café"
    assert all(item.valid for item in items)


def test_shift_jis_export_without_meta_is_detected() -> None:
    items = parse((FIXTURES / "legacy_shift_jis.html").read_bytes())
    assert [item.title for item in items] == [
        "NHKニュース 日本のニュースと天気予報をお届けします",
        "朝日新聞デジタル：朝日新聞社のニュースサイト",
        "毎日新聞のニュース・情報サイト",
    ]
    assert {item.collection_path for item in items} == {("ニュース",)}


def test_utf8_bom_and_utf16_exports() -> None:
    body = '<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n<DT><A HREF="https://a.example/">Ärger</A>\n</DL>\n'
    for data in (b"\xef\xbb\xbf" + body.encode("utf-8"), body.encode("utf-16")):
        items = parse(data)
        assert [(item.line, item.url, item.title) for item in items] == [(3, "https://a.example/", "Ärger")]


def test_pinboard_style_flat_file_with_descriptions_and_unclosed_tags() -> None:
    data = b"""<!DOCTYPE NETSCAPE-Bookmark-file-1>
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>Pinboard Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p><DT><A HREF="https://pinboard.example/one" ADD_DATE="1500000000" PRIVATE="1" TOREAD="1" TAGS="a,b, c ,,">One</A>
<DD>first line
second line &amp; more
<DT><A HREF="https://pinboard.example/two" ADD_DATE="garbage" TAGS="">Two
<DT><A>no href</A>
</DL></p>"""
    items = parse(data)
    assert [(item.line, item.url) for item in items] == [
        (5, "https://pinboard.example/one"),
        (8, "https://pinboard.example/two"),
        (9, ""),
    ]
    assert items[0].description == "first line\nsecond line & more"
    assert items[0].user_tags == ("a", "b", "c")
    assert items[1].title == "Two" and items[1].saved_at is None
    assert items[2].reason == "The bookmark has no HREF."


def test_folders_deeper_than_ten_levels_are_cut_to_ten_with_a_warning() -> None:
    depth = 14
    opening = "".join(f"<DT><H3>L{i}</H3>\n<DL><p>\n" for i in range(1, depth + 1))
    closing = "</DL><p>\n" * depth
    data = f'<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n{opening}<DT><A HREF="https://deep.example/">deep</A>\n{closing}</DL>'
    [item] = parse(data.encode())
    assert item.collection_path == tuple(f"L{i}" for i in range(1, 11))
    assert item.warnings == ("folder nested 14 levels deep; kept its first 10 levels",)
    assert item.valid


def test_long_titles_are_cut_and_noted() -> None:
    data = f'<DL><DT><A HREF="https://a.example/">{"t" * 5000}</A></DL>'.encode()
    [item] = parse(data)
    assert item.title == "t" * 1000
    assert item.warnings == ("title shortened to 1000 characters",)


def test_pockets_older_html_export_keeps_its_archived_state() -> None:
    data = (FIXTURES / "pocket_ril_export.html").read_bytes()
    items = list(iter_items(io.BytesIO(data)))  # detected as a bookmark file
    assert [(item.line, item.is_archived, item.user_tags) for item in items] == [
        (11, False, ("tech", "longform")),
        (12, False, ()),
        (17, True, ("done",)),
    ]
    assert items[0].title == "The Atlantic — Technology"
    assert items[2].saved_at == datetime.fromtimestamp(1400000000, tz=UTC)
    assert items[2].title == "Finished & archived"


def test_a_browser_files_h1_sets_no_archived_state() -> None:
    items = parse((FIXTURES / "chrome_crlf.html").read_bytes())
    assert {item.is_archived for item in items} == {None}


def test_html_whitespace_in_titles_and_folder_names_is_collapsed() -> None:
    data = b'<DL><DT><H3>\n   My\n   folder </H3>\n<DL><DT><A HREF="https://a.example/">\n  A   wrapped\n  title\n</A></DL></DL>'
    [item] = parse(data)
    assert (item.title, item.collection_path) == ("A wrapped title", ("My folder",))
