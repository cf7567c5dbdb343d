"""`bookmarks import` and `export`: their options, and the bookmark count behind the export's progress."""

from __future__ import annotations

import pytest

from bookmark_client.cli import build_parser
from bookmark_client.views import ExportCounter


def test_import_options() -> None:
    args = vars(build_parser({}).parse_args(["import", "export.csv"]))
    assert (args["file"], args["format"]) == ("export.csv", "auto")
    assert vars(build_parser({}).parse_args(["import", "f.zip", "--format", "omnivore"]))["format"] == "omnivore"
    with pytest.raises(SystemExit):
        build_parser({}).parse_args(["import", "f", "--format", "excel"])


@pytest.mark.parametrize(
    ("fmt", "body", "count"),
    [
        ("json", b'{"bookmarks": [\n{"clientBookmarkId":"a"},\n{"clientBookmarkId":"b"}]}', 2),
        ("netscape", b'<DL><p>\n<DT><H3>F</H3>\n<DL><p>\n<DT><A HREF="x">X</A>\n<DT><A HREF="y">Y</A>\n', 2),
        ("csv", b"\xef\xbb\xbfurl,title\r\nhttps://a/,A\r\nhttps://b/,B\r\nhttps://c/,C\r\n", 3),
        ("markdown", b"# Highlights\n\n## [A](<https://a/>)\n\n> q\n\n## [B](<https://b/>)\n\nnotes\n\n", 2),
        (
            "annotations",
            b'{"type":"AnnotationCollection","first":{"items":[\n{"id":"1","type":"Annotation"},\n'
            b'{"id":"2","type":"Annotation"}]}}',
            2,
        ),  # fmt: skip
    ],
)
def test_the_export_counter_counts_each_bookmark_once_however_the_stream_is_cut(
    fmt: str, body: bytes, count: int
) -> None:
    for size in (1, 2, 3, 7, len(body)):
        counter = ExportCounter(fmt)
        for start in range(0, len(body), size):
            counter.feed(body[start : start + size])
        assert counter.count == count, (fmt, size)
