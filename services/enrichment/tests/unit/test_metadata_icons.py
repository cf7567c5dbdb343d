"""The page's icon for a preview: the largest declared raster icon, else /favicon.ico."""

from __future__ import annotations

from enrichment.metadata import parse_html, read_metadata


def icon(head: str, base: str = "https://example.com/a/page") -> str | None:
    root = parse_html(f"<html><head>{head}</head><body></body></html>")
    assert root is not None
    return read_metadata(root, base).icon_url


def test_no_declared_icon_is_the_origins_favicon() -> None:
    assert icon("<title>x</title>") == "https://example.com/favicon.ico"


def test_the_largest_declared_icon_wins_and_svg_is_skipped() -> None:
    head = (
        "<link rel='icon' href='/small.png' sizes='16x16'>"
        "<link rel='icon' type='image/svg+xml' href='/vector.svg' sizes='any'>"
        "<link rel='apple-touch-icon' href='touch.png' sizes='180x180'>"
        "<link rel='mask-icon' href='/mask.svg'>"
    )
    assert icon(head) == "https://example.com/a/touch.png"


def test_an_icon_that_is_not_http_is_ignored() -> None:
    assert icon("<link rel='icon' href='javascript:alert(1)'>") == "https://example.com/favicon.ico"
    assert icon("<link rel='shortcut icon' href='data:image/png;base64,AAAA'>") == "https://example.com/favicon.ico"
