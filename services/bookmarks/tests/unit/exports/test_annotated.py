"""Pure parts of the highlight exports: URL text fragments, Markdown escaping and the document, and the Web
Annotation collection checked against examples in the W3C model's shapes (fixtures/)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from bookmarks.domain.model import Bookmark
from bookmarks.exports.annotated import (
    ANNOTATION_CONTEXT,
    AnnotationsWriter,
    MarkdownWriter,
    escape_markdown,
    link_destination,
    text_fragment_url,
)
from bookmarks.exports.folders import FolderTree
from bookmarks.highlights.rules import Highlight

FIXTURES = Path(__file__).parent / "fixtures"
OWNER = uuid.uuid4()
T0 = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = datetime(2024, 1, 3, 3, 4, 5, tzinfo=UTC)


def bm(bid: str, **fields: Any) -> Bookmark:
    base: dict[str, Any] = {
        "owner_uid": OWNER,
        "client_bookmark_id": bid,
        "url": f"https://{bid}.example/post",
        "normalized_url": f"https://{bid}.example/post",
        "domain": f"{bid}.example",
        "created_at": T0,
        "updated_at": T0,
    }
    return Bookmark(**(base | fields))


def hl(hid: str, quote: str, *, bid: str = "b1", **fields: Any) -> Highlight:
    base: dict[str, Any] = {
        "owner_uid": OWNER,
        "highlight_id": hid,
        "client_bookmark_id": bid,
        "quote": quote,
        "prefix": "",
        "suffix": "",
        "quote_start": None,
        "quote_end": None,
        "color": "yellow",
        "note": "",
        "anchor": None,
        "created_at": T0,
        "updated_at": T1,
    }
    return Highlight(**(base | fields))


# --- text fragments ---------------------------------------------------------------------------------------


def test_a_text_fragment_with_context_and_encoded_syntax() -> None:
    url = text_fragment_url(
        "https://a.example/p", "cats, dogs & well-known birds", "I saw the many", "in the park today"
    )
    assert url == (
        "https://a.example/p#:~:text=saw%20the%20many-,cats%2C%20dogs%20%26%20well%2Dknown%20birds,-in%20the%20park"
    )


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=200))
def test_a_directive_term_is_the_text_percent_encoded_as_urllib_does_with_the_dash_too(text: str) -> None:
    url = text_fragment_url("https://a.example/", f"x {text} y")
    words = " ".join(f"x {text} y".split())
    assert url == "https://a.example/#:~:text=" + quote(words, safe="").replace("-", "%2D")


def test_a_text_fragment_without_context_and_after_an_existing_fragment() -> None:
    assert text_fragment_url("https://a.example/p", "  Hello  world ") == "https://a.example/p#:~:text=Hello%20world"
    assert text_fragment_url("https://a.example/p#intro", "x") == "https://a.example/p#intro:~:text=x"
    assert text_fragment_url("https://a.example/p", "   ") == "https://a.example/p"


def test_a_long_quote_is_linked_by_its_first_and_last_words() -> None:
    words = [f"w{i}" for i in range(80)]
    url = text_fragment_url("https://a.example/", " ".join(words), suffix="after it")
    directive = url.split("#:~:text=")[1]
    start, end, suffix = directive.split(",")
    assert unquote(start) == "w0 w1 w2 w3 w4" and unquote(end) == "w75 w76 w77 w78 w79"
    assert suffix == "-after%20it"


def test_non_ascii_text_is_percent_encoded_as_utf8() -> None:
    assert text_fragment_url("https://a.example/", "Économie") == "https://a.example/#:~:text=%C3%89conomie"


# --- Markdown -----------------------------------------------------------------------------------------------

md = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def test_escaped_text_renders_as_itself() -> None:
    hostile = [
        "[click](javascript:alert(1))",
        "<script>alert(1)</script>",
        "<https://evil.example>",
        "![img](https://evil.example/x.png)",
        "# not a heading",
        "- not a list",
        "1. not a list",
        "2) nor this",
        "> not a quote",
        "---",
        "===",
        "*em* _em_ `code` ~~del~~ a | b",
        "&amp; &#60;",
        "    not code",
        "trailing backslash \\",
    ]
    for text in hostile:
        html = md.render("\n".join(escape_markdown(text)))
        assert "<a " not in html and "<img" not in html and "<script" not in html, text
        assert "<h1" not in html and "<li" not in html and "<blockquote" not in html and "<hr" not in html, text
        assert "<em" not in html and "<code" not in html and "<del" not in html and "<table" not in html, text
        assert html.startswith("<p>"), (text, html)


def test_escaping_keeps_ordinary_text_and_lines() -> None:
    assert escape_markdown("Hello, world. It's 5 o'clock (really)!\n\nNext") == [
        "Hello, world. It's 5 o'clock (really)!",
        "",
        "Next",
    ]


def test_link_destinations_cannot_be_closed_early() -> None:
    assert link_destination("https://a.example/x y>z<") == "<https://a.example/x%20y%3Ez%3C>"


def test_the_markdown_document() -> None:
    writer = MarkdownWriter(FolderTree.of([]), is_pro=False, exported_at=T0)
    title = "Fish & [Chips](https://evil.example)"
    items = [
        (bm("b1", title=title, notes="My *notes*\nline 2"), [
            hl("h1", "The tide returns", prefix="rocks until ", suffix=" and the pool", note="Remember <this>"),
            hl("h2", "Second\npassage"),
        ]),
        (bm("b2"), []),  # nothing to say: left out
        (bm("b3", notes="Only notes"), []),
    ]  # fmt: skip
    text = writer.head() + writer.annotated(items) + writer.tail()
    assert text == (
        "# Highlights\n\nExported 2024-01-02T03:04:05.000000Z.\n\n"
        "## [Fish \\& \\[Chips\\](https://evil.example)](<https://b1.example/post>)\n\n"
        "My \\*notes\\*\nline 2\n\n"
        "> The tide returns\n\n"
        "Remember \\<this\\>\n\n"
        "[Open the passage](<https://b1.example/post#:~:text=rocks%20until-,The%20tide%20returns,-and%20the%20pool>)\n\n"
        "> Second\n> passage\n\n"
        "[Open the passage](<https://b1.example/post#:~:text=Second%20passage>)\n\n"
        "## [https://b3.example/post](<https://b3.example/post>)\n\n"
        "Only notes\n\n"
    )
    html = md.render(text)
    assert html.count("<a href=") == 4 and 'evil.example"' not in html and "<this>" not in html
    assert html.count("<blockquote>") == 2


# --- W3C Web Annotation -------------------------------------------------------------------------------------

# What the model requires of each kind of object (its MUSTs).
REQUIRED = {
    "AnnotationCollection": {"@context", "id", "type"},
    "AnnotationPage": {"id", "type", "items"},
    "Annotation": {"id", "type", "target"},
    "TextQuoteSelector": {"type", "exact"},
    "TextPositionSelector": {"type", "start", "end"},
    "TextualBody": {"type", "value"},
}
TARGET = "SpecificResource"  # a target object without a type: source + selector


def _kind(node: dict[str, Any], parent_key: str | None) -> str:
    return str(node.get("type", TARGET if parent_key == "target" else "?"))


def _shapes(node: Any, shapes: dict[str, dict[str, set[type]]], parent_key: str | None = None) -> None:
    """Every object kind of ``node`` with each key it uses and the JSON types of its values."""
    if isinstance(node, list):
        for child in node:
            _shapes(child, shapes, parent_key)
    elif isinstance(node, dict):
        keys = shapes.setdefault(_kind(node, parent_key), {})
        for key, value in node.items():
            keys.setdefault(key, set()).add(type(value))
            _shapes(value, shapes, key)


def example_shapes() -> dict[str, dict[str, set[type]]]:
    shapes: dict[str, dict[str, set[type]]] = {}
    for path in sorted(FIXTURES.glob("w3c-*.jsonld")):
        _shapes(json.loads(path.read_text()), shapes)
    return shapes


def assert_conforms(document: dict[str, Any]) -> None:
    """Every object of ``document`` is a kind the examples show, uses only keys they use for it, with
    values of the same JSON types (a selector is one object or a list), and has the model's required keys."""
    examples = example_shapes()
    ours: dict[str, dict[str, set[type]]] = {}
    _shapes(document, ours)
    for kind, keys in ours.items():
        assert kind in examples, kind
        for key, types in keys.items():
            assert key in examples[kind], (kind, key)
            assert types <= examples[kind][key] | ({list, dict} if key == "selector" else set()), (kind, key, types)
    stack: list[Any] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            assert REQUIRED.get(str(node.get("type")), set()) <= set(node), node
            stack += list(node.values())
        elif isinstance(node, list):
            stack += node


def test_the_examples_pass_their_own_check() -> None:
    for path in FIXTURES.glob("w3c-*.jsonld"):
        assert_conforms(json.loads(path.read_text()))


def annotations_document(items: Any) -> dict[str, Any]:
    writer = AnnotationsWriter(FolderTree.of([]), is_pro=False, exported_at=T0)
    parts = [writer.head(), *(writer.annotated(piece) for piece in items), writer.tail()]
    document: dict[str, Any] = json.loads("".join(parts))
    return document


def test_the_annotation_collection_conforms_to_the_model() -> None:
    b1, b2 = bm("b1"), bm("b2")
    pieces = [
        [
            (
                b1,
                [
                    hl(
                        "h1",
                        "exact words",
                        prefix="before ",
                        suffix=" after",
                        quote_start=10,
                        quote_end=21,
                        note="a note",
                    )
                ],
            )
        ],  # fmt: skip
        [(b2, [hl("h2", "unanchored", bid="b2")]), (bm("b3"), [])],
    ]
    document = annotations_document(pieces)
    assert_conforms(document)
    assert document["@context"] == ANNOTATION_CONTEXT and document["type"] == "AnnotationCollection"
    page = document["first"]
    assert page["type"] == "AnnotationPage" and page["startIndex"] == 0
    first, second = page["items"]
    assert first["target"] == {
        "source": "https://b1.example/post",
        "selector": [
            {"type": "TextQuoteSelector", "exact": "exact words", "prefix": "before ", "suffix": " after"},
            {"type": "TextPositionSelector", "start": 10, "end": 21},
        ],
    }
    assert first["body"] == {"type": "TextualBody", "value": "a note", "format": "text/plain", "purpose": "commenting"}
    assert first["motivation"] == "commenting" and first["created"] == "2024-01-02T03:04:05.000000Z"
    assert first["modified"] == "2024-01-03T03:04:05.000000Z"
    # No offsets: the quote selector alone; no note: no body.
    assert second["target"]["selector"] == {"type": "TextQuoteSelector", "exact": "unanchored"}
    assert "body" not in second and second["motivation"] == "highlighting"
    # Ids are IRIs, stable per highlight.
    assert (
        first["id"].startswith("urn:uuid:") and first["id"] == annotations_document(pieces)["first"]["items"][0]["id"]
    )
    assert first["id"] != second["id"]


def test_an_empty_collection_is_valid_json() -> None:
    document = annotations_document([])
    assert document["first"]["items"] == []
    assert_conforms(document)
