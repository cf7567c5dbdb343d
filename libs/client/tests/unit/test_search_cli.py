"""The search command's rendering of server snippets."""

from __future__ import annotations

from bookmark_client.cli import build_parser
from bookmark_client.views import render_snippet


def test_marks_become_emphasis_and_entities_are_decoded() -> None:
    snippet = "&lt;script&gt; <mark>Économie</mark> &amp; <mark>budget</mark>…"
    assert render_snippet(snippet, emphasis=False).plain == "<script> [Économie] & [budget]…"
    emphasised = render_snippet(snippet, emphasis=True)
    assert emphasised.plain == "<script> Économie & budget…"
    assert [emphasised.plain[s.start : s.end] for s in emphasised.spans if s.style == "mark"] == ["Économie", "budget"]


def test_no_terminal_escape_survives_from_page_text() -> None:
    assert render_snippet("a&#27;[31mred <mark>x\x1b</mark>", emphasis=False).plain == "a[31mred [x]"


def test_search_command_joins_the_query_words() -> None:
    args = build_parser({}).parse_args(["search", "tag:news", '"climate change"', "--limit", "5", "--json"])
    assert (args.command, " ".join(args.query), args.limit, args.json) == (
        "search",
        'tag:news "climate change"',
        5,
        True,
    )
