"""The search command's rendering of server snippets."""

from __future__ import annotations

from bookmark_client.cli import build_parser, render_snippet


def test_marks_become_emphasis_and_entities_are_decoded() -> None:
    snippet = "&lt;script&gt; <mark>Économie</mark> &amp; <mark>budget</mark>…"
    assert render_snippet(snippet, emphasis=False) == "<script> [Économie] & [budget]…"
    assert render_snippet(snippet, emphasis=True) == "<script> \x1b[1mÉconomie\x1b[0m & \x1b[1mbudget\x1b[0m…"


def test_no_terminal_escape_survives_from_page_text() -> None:
    assert render_snippet("a&#27;[31mred <mark>x\x1b</mark>", emphasis=False) == "a[31mred [x]"


def test_search_command_joins_the_query_words() -> None:
    args = build_parser({}).parse_args(["search", "tag:news", '"climate change"', "--limit", "5", "--json"])
    assert (args.command, " ".join(args.query), args.limit, args.json) == (
        "search",
        'tag:news "climate change"',
        5,
        True,
    )
