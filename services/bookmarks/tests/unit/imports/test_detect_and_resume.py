"""format=auto detection, and resuming a crashed import from an ordinal."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from bookmarks.imports.formats import (
    FORMATS,
    ImportFormatError,
    count_items,
    detect_format,
    iter_items,
    resolve_format,
)

FIXTURES = Path(__file__).parent / "fixtures"


def omnivore_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for n in range(3):
            archive.writestr(
                f"metadata_{n * 2}_to_{n * 2 + 1}.json",
                json.dumps(
                    [
                        {"url": f"https://z.example/{n}/{k}", "title": f"{n}-{k}", "labels": [], "state": "Active"}
                        for k in range(2)
                    ]
                ),
            )
    return buffer.getvalue()


SAMPLES = {
    "firefox.html": "netscape",
    "chrome_crlf.html": "netscape",
    "legacy_cp1252.html": "netscape",
    "legacy_shift_jis.html": "netscape",
    "pocket_ril_export.html": "netscape",
    "pocket.csv": "pocket-csv",
    "instapaper.csv": "instapaper-csv",
    "raindrop.csv": "raindrop-csv",
    "export_v1.json": "json",
}


def sample(name: str) -> bytes:
    return omnivore_bytes() if name == "omnivore.zip" else (FIXTURES / name).read_bytes()


@pytest.mark.parametrize(("name", "fmt"), [*SAMPLES.items(), ("omnivore.zip", "omnivore")])
def test_every_sample_is_detected(name: str, fmt: str) -> None:
    assert detect_format(sample(name)[:65536]) == fmt
    assert resolve_format(io.BytesIO(sample(name))) == fmt


def test_detection_sees_through_boms_and_utf16() -> None:
    html = '<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n<DT><A HREF="https://a.example/">a</A>\n</DL>\n'
    assert detect_format(html.encode("utf-16")) == "netscape"
    assert detect_format(b"\xef\xbb\xbf" + b'{"version": 1}') == "json"
    assert detect_format(b"\xef\xbb\xbfURL,Title,Selection,Folder,Timestamp\r\n") == "instapaper-csv"
    assert detect_format(b'<DL><p><DT><A HREF="https://a.example/">a</A></DL>') == "netscape"


@pytest.mark.parametrize(
    "head",
    [
        b"name,address\nx,y\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"<html><body><p>just a web page</p></body></html>",
        b"a" * 70000,
        b"[1, 2, 3]",
    ],
)
def test_unrecognised_files_fail_clearly(head: bytes) -> None:
    with pytest.raises(ImportFormatError, match="not a recognised export"):
        detect_format(head)


@pytest.mark.parametrize("fmt", ["auto", *FORMATS])
@pytest.mark.parametrize("data", [b"", b"  \r\n\t "])
def test_an_empty_file_is_refused_in_every_format(fmt: str, data: bytes) -> None:
    with pytest.raises(ImportFormatError, match="The file is empty."):
        list(iter_items(io.BytesIO(data), fmt))


def test_an_unknown_format_name_is_refused() -> None:
    with pytest.raises(ImportFormatError, match="Unknown format 'pinboard'"):
        list(iter_items(io.BytesIO(b"x"), "pinboard"))


@pytest.mark.parametrize("name", [*SAMPLES, "omnivore.zip"])
def test_resuming_from_an_ordinal_yields_exactly_the_remaining_items(name: str) -> None:
    everything = list(iter_items(io.BytesIO(sample(name))))
    assert [item.ordinal for item in everything] == list(range(len(everything)))
    assert len(everything) >= 2
    for start in (0, 1, len(everything) - 1, len(everything), len(everything) + 5):
        assert list(iter_items(io.BytesIO(sample(name)), start=start)) == everything[start:]


@pytest.mark.parametrize("name", [*SAMPLES, "omnivore.zip"])
def test_the_count_pass_counts_every_item_and_keeps_the_first_ones_as_iter_items_yields_them(name: str) -> None:
    everything = list(iter_items(io.BytesIO(sample(name))))
    fmt = resolve_format(io.BytesIO(sample(name)))
    for keep in (0, 1, len(everything) - 1, len(everything), len(everything) + 5):
        total, first = count_items(io.BytesIO(sample(name)), fmt, keep=keep)
        assert total == len(everything)
        assert first == everything[:keep]
