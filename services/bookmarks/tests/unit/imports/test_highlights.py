"""Highlights in imported files: the JSON export, Raindrop's ``highlights`` column, Omnivore's
``highlights/<slug>.md`` files and ``highlights`` arrays; the limits, which make an item invalid rather
than cut a user's text; the import's stable highlight ids."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bookmarks.imports import rules
from bookmarks.imports.formats import iter_items
from bookmarks.imports.formats.csvformats import raindrop_highlights
from bookmarks.imports.formats.model import ImportHighlight, ImportItem, clean_highlight, with_highlights
from bookmarks.imports.formats.omnivore import highlights_markdown

FIXTURES = Path(__file__).parent / "fixtures"


def parse(data: bytes, fmt: str) -> list[ImportItem]:
    return list(iter_items(io.BytesIO(data), fmt))


# --- the limits -----------------------------------------------------------------------------------------


def test_a_highlight_is_cleaned_like_the_api_stores_it() -> None:
    cleaned = clean_highlight(
        ImportHighlight(
            quote="  a quote \n",
            note=" n ",
            prefix="p" * 100 + "end",
            suffix="start" + "s" * 100,
            start=5,
            end=3,
            color="red",
        )  # fmt: skip
    )
    assert cleaned == ImportHighlight(quote="a quote", note="n", prefix=("p" * 100 + "end")[-64:],
                                      suffix=("start" + "s" * 100)[:64], start=None, end=None, color="yellow")  # fmt: skip
    assert clean_highlight(ImportHighlight(quote="x", start=0, end=1, color="green")) == ImportHighlight(
        quote="x", start=0, end=1, color="green"
    )


@pytest.mark.parametrize(
    ("highlight", "reason"),
    [
        (ImportHighlight(quote="   "), "Highlight 2: a highlight has no text."),
        (ImportHighlight(quote="q" * 5001), "Highlight 2: a highlight is longer than 5,000 characters."),
        (
            ImportHighlight(quote="q", note="n" * 10_001),
            "Highlight 2: a highlight's note is longer than 10,000 characters.",
        ),
    ],
)
def test_an_item_with_a_highlight_over_a_limit_is_invalid(highlight: ImportHighlight, reason: str) -> None:
    item = ImportItem(line=3, url="https://a.example/", title="kept?")
    result = with_highlights(item, [ImportHighlight(quote="fine"), highlight])
    assert result.reason == reason and result.url == "https://a.example/" and result.line == 3
    assert with_highlights(item, [ImportHighlight(quote="q" * 5000, note="n" * 10_000)]).valid


def test_more_highlights_than_a_bookmark_holds_make_the_item_invalid() -> None:
    item = ImportItem(line=1, url="https://a.example/")
    assert with_highlights(item, [ImportHighlight(quote=f"q{i}") for i in range(1000)]).valid
    too_many = with_highlights(item, [ImportHighlight(quote=f"q{i}") for i in range(1001)])
    assert too_many.reason == "The bookmark has more than 1,000 highlights."


def test_import_highlight_ids_are_stable_per_bookmark_and_passage() -> None:
    h = ImportHighlight(quote="q", prefix="a", suffix="b")
    assert rules.imported_highlight_id("b1", h) == rules.imported_highlight_id(
        "b1", ImportHighlight("q", "note", "a", "b")
    )
    assert rules.imported_highlight_id("b1", h) != rules.imported_highlight_id("b2", h)
    assert rules.imported_highlight_id("b1", h) != rules.imported_highlight_id("b1", ImportHighlight(quote="q"))
    hid = rules.imported_highlight_id("b1", h)
    assert hid.startswith("imp-") and len(hid) == 44
    assert rules.highlight_limit(999, 10, 1) is None
    assert rules.highlight_limit(999, 10, 2) == "The bookmark would hold more than 1,000 highlights."
    assert rules.highlight_limit(0, 99_999, 2) == "You would keep more than 100,000 highlights."
    record = rules.new_highlight(uuid.uuid4(), hid, "b1", h, datetime(2024, 1, 1, tzinfo=UTC))
    assert (record.quote, record.prefix, record.suffix, record.anchor) == ("q", "a", "b", None)


# --- JSON -------------------------------------------------------------------------------------------------


def export(bookmarks: list[object]) -> bytes:
    return json.dumps({"version": 1, "exportedAt": "2026-01-01T00:00:00Z", "collections": [],
                       "bookmarks": bookmarks}).encode()  # fmt: skip


def test_json_highlights_are_read() -> None:
    highlight = {"id": "h1", "bookmarkId": "b1", "quote": "The tide", "prefix": "when ", "suffix": " turns",
                 "start": 10, "end": 18, "color": "blue", "note": "nice", "anchor": "exact",
                 "createdAt": "2026-01-01T00:00:00.000000Z", "updatedAt": "2026-01-01T00:00:00.000000Z"}  # fmt: skip
    items = parse(
        export([{"url": "https://a.example/", "highlights": [highlight]}, {"url": "https://b.example/"}]), "json"
    )
    assert items[0].highlights == (ImportHighlight("The tide", "nice", "when ", " turns", 10, 18, "blue"),)
    assert items[1].highlights == () and items[1].valid


@pytest.mark.parametrize(
    ("highlights", "reason"),
    [
        ("nope", "highlights must be a list of objects."),
        ([{"quote": 3}], "Highlight 1: quote must be a string."),
        ([{"quote": "q", "note": 5}], "Highlight 1: prefix, suffix, color, note, createdAt must be strings or null."),
        ([{"quote": "q", "start": "1"}], "Highlight 1: start must be an integer or null."),
        ([{"quote": "q" * 5001}], "Highlight 1: a highlight is longer than 5,000 characters."),
    ],
)
def test_bad_json_highlights_make_the_item_invalid(highlights: object, reason: str) -> None:
    [item] = parse(export([{"url": "https://a.example/", "highlights": highlights}]), "json")
    assert item.reason == reason


# --- Raindrop -------------------------------------------------------------------------------------------


def test_raindrop_highlight_cells() -> None:
    cell = "Highlight:One\nNote:first note\n\nHighlight: Two\nlines\nNote:n1\nn2\nHighlight:Three"
    assert raindrop_highlights(cell) == [
        ImportHighlight(quote="One", note="first note"),
        ImportHighlight(quote="Two\nlines", note="n1\nn2"),
        ImportHighlight(quote="Three"),
    ]
    assert raindrop_highlights("") == [] and raindrop_highlights("  \n ") == []
    assert raindrop_highlights("A\n\nB\nc") == [ImportHighlight(quote="A"), ImportHighlight(quote="B\nc")]


def test_a_raindrop_export_with_highlights() -> None:
    pools, plain, old = parse((FIXTURES / "raindrop_highlights.csv").read_bytes(), "raindrop-csv")
    assert pools.notes == "Read again before the trip"
    assert pools.highlights == (
        ImportHighlight(quote="Anemones close when the water leaves them.", note="Check this at low tide"),
        ImportHighlight(quote="Crabs hide under rocks until the tide returns\nand the pool fills again."),
        ImportHighlight(quote="Put every stone back where you found it.", note="The ranger's rule\n(twice underlined)"),
    )
    assert plain.highlights == () and plain.valid
    assert old.highlights == (ImportHighlight(quote="First passage"), ImportHighlight(quote="Second passage"))


# --- Omnivore -------------------------------------------------------------------------------------------


def test_omnivore_highlight_markdown() -> None:
    text = "> The first passage \n\nWhat I think of it.\n\nMore of it.\n\n> A quote\n> over two lines\n\n> A bare one"
    assert highlights_markdown(text) == [
        ImportHighlight(quote="The first passage", note="What I think of it.\n\nMore of it."),
        ImportHighlight(quote="A quote\nover two lines"),
        ImportHighlight(quote="A bare one"),
    ]
    assert highlights_markdown("") == [] and highlights_markdown("no quotes here") == []


def omnivore_export() -> bytes:
    """An Omnivore export: metadata files, content files, and highlights/<slug>.md as Omnivore wrote them."""

    def article(n: int, **extra: object) -> dict[str, object]:
        return {"id": f"5d1e{n:04d}-0000-4000-8000-000000000000", "slug": f"tide-pools-{n}-18c{n:04x}",
                "title": f"Tide pools {n}", "description": "", "author": "A. Ranger",
                "url": f"https://pools.example/{n}", "state": "Active", "readingProgress": 40,
                "thumbnail": None, "labels": ["ocean"], "savedAt": "2024-06-01T10:00:00.000Z",
                "updatedAt": "2024-06-02T10:00:00.000Z", "publishedAt": None} | extra  # fmt: skip

    listed = [
        {"id": "h-1", "type": "HIGHLIGHT", "quote": "Listed passage", "annotation": "listed note", "prefix": "a ",
         "suffix": " b", "createdAt": "2024-06-01T10:00:00.000Z", "highlightPositionPercent": 12.5},
        {"id": "h-2", "type": "NOTE", "quote": None, "annotation": "a note on the article"},
        {"id": "h-3", "type": "REDACTION", "quote": "hidden"},
    ]  # fmt: skip
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata_0_to_2.json", json.dumps([article(0), article(1), article(2, highlights=listed)]))
        archive.writestr("content/tide-pools-0-18c0000.html", "<html><body><p>Anemones close.</p></body></html>")
        archive.writestr("highlights/tide-pools-0-18c0000.md",
                         "> Anemones close when the water leaves them. \n\nSee the photo.\n\n> Crabs hide \n\n")  # fmt: skip
        archive.writestr("highlights/tide-pools-1-18c0001.md", "")
    return buffer.getvalue()


def test_an_omnivore_export_with_highlights() -> None:
    first, second, third = parse(omnivore_export(), "omnivore")
    assert first.highlights == (
        ImportHighlight(quote="Anemones close when the water leaves them.", note="See the photo."),
        ImportHighlight(quote="Crabs hide"),
    )
    assert second.highlights == () and second.valid
    assert third.highlights == (ImportHighlight(quote="Listed passage", note="listed note", prefix="a ", suffix=" b"),)


def test_an_omnivore_highlight_over_the_limit_makes_its_article_invalid() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("metadata_0_to_0.json", json.dumps([{"url": "https://a.example/", "slug": "a"}]))
        archive.writestr("highlights/a.md", "> " + "x" * 5001)
    [item] = parse(buffer.getvalue(), "omnivore")
    assert item.reason == "Highlight 1: a highlight is longer than 5,000 characters."
