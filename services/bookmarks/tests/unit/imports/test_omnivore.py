"""Omnivore's export ZIP: several metadata_N_to_M.json files beside content/ and highlights/."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bookmarks.imports.formats import ImportFormatError, ImportItem, ZipLimits, iter_items
from bookmarks.imports.formats.omnivore import parse_omnivore


def article(n: int, **extra: object) -> dict[str, object]:
    record: dict[str, object] = {
        "id": f"7f3c{n:04d}-0000-4000-8000-00000000000{n % 10}",
        "slug": f"article-{n}-18f{n:04x}",
        "title": f"Article {n}",
        "description": f"Description of article {n}, with a comma.",
        "author": "Someone",
        "url": f"https://news.example/{n}",
        "state": "Active",
        "readingProgress": 0,
        "thumbnail": f"https://proxy-prod.omnivore-image-cache.app/{n}.jpg",
        "labels": [],
        "savedAt": f"2024-10-{n % 28 + 1:02d}T12:39:28.023Z",
        "updatedAt": "2024-10-30T12:39:28.023Z",
        "publishedAt": None,
    }
    record.update(extra)
    return record


def omnivore_zip(files: dict[str, object]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content if isinstance(content, (str, bytes)) else json.dumps(content, indent=2))
    buffer.seek(0)
    return buffer


def realistic_export() -> io.BytesIO:
    first = [
        article(0, labels=["Newsletter", "to read"], state="Archived"),
        article(1, labels=["Tech", "tech", "Rust"], title="Async Rust, explained\nin depth"),
        article(2, url="https://omnivore.app/no_url?q=2a9b-pdf", title="Uploaded.pdf", thumbnail=None),
    ]
    second = [article(3, state="Succeeded"), article(4, url="ftp://files.example/x"), "garbage", article(5, url=None)]
    return omnivore_zip(
        {
            "metadata_3_to_6.json": second,  # stored first in the archive: order comes from the numbers
            "content/article-0-18f0000.html": "<html><body>text</body></html>",
            "highlights/article-1-18f0001.md": "> a highlight",
            "metadata_0_to_2.json": first,
        }
    )


def test_every_metadata_file_is_read_in_numeric_order_with_positions() -> None:
    items = list(iter_items(realistic_export(), "omnivore"))
    assert [item.line for item in items] == [1, 2, 3, 4, 5, 6, 7]
    assert [item.url for item in items[:4]] == [
        f"https://news.example/{n}" if n != 2 else "https://omnivore.app/no_url?q=2a9b-pdf" for n in range(4)
    ]
    first, second, _pdf, fourth, ftp, garbage, no_url = items
    assert first.user_tags == ("Newsletter", "to read") and first.is_archived is True
    assert first.saved_at == datetime(2024, 10, 1, 12, 39, 28, 23000, tzinfo=UTC)
    assert first.description == "Description of article 0, with a comma."
    assert first.thumbnail_url == "https://proxy-prod.omnivore-image-cache.app/0.jpg"
    assert second.user_tags == ("Tech", "Rust") and second.is_archived is False
    assert second.title == "Async Rust, explained\nin depth"
    assert fourth.is_archived is False
    assert ftp.reason == "URL must start with http:// or https://."
    assert garbage.reason == "The entry is not a JSON object."
    assert no_url.reason == "The entry has no URL."


def test_label_objects_of_older_exports_are_read() -> None:
    data = omnivore_zip({"metadata_0_to_0.json": [article(0, labels=[{"name": "Work", "color": "#fff"}])]})
    [item] = list(iter_items(data, "omnivore"))
    assert item.user_tags == ("Work",)


def test_a_zip_without_metadata_is_not_an_omnivore_export() -> None:
    with pytest.raises(ImportFormatError, match="no metadata_"):
        list(iter_items(omnivore_zip({"content/a.html": "<p>"}), "omnivore"))


def test_path_tricks_are_not_read_and_reported_as_invalid_items() -> None:
    data = omnivore_zip(
        {
            "../metadata_0_to_0.json": [article(0)],
            "/etc/metadata_1_to_1.json": [article(1)],
            "C:/metadata_2_to_2.json": [article(2)],
            "a\\..\\metadata_3_to_3.json": [article(3)],
            "export/metadata_4_to_4.json": [article(4)],
        }
    )
    items = list(iter_items(data, "omnivore"))
    assert [item.valid for item in items] == [False, False, False, False, True]
    assert items[0].reason == "ZIP entry '../metadata_0_to_0.json' climbs out of the archive ('..'); it was not read."
    assert "absolute path" in (items[1].reason or "") and "absolute path" in (items[2].reason or "")
    assert "backslash" in (items[3].reason or "")
    assert items[4].url == "https://news.example/4"


def test_a_file_that_is_not_a_zip_fails_clearly() -> None:
    with pytest.raises(ImportFormatError, match="not a readable ZIP"):
        list(iter_items(io.BytesIO(b"PK\x03\x04 this is not really a zip"), "omnivore"))


def test_a_metadata_file_that_is_not_json_fails_clearly() -> None:
    with pytest.raises(ImportFormatError, match="Invalid JSON"):
        list(iter_items(omnivore_zip({"metadata_0_to_1.json": "{not json"}), "omnivore"))


def test_a_zip_bomb_is_cut_off_at_the_entry_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("metadata_0_to_1.json", "w", force_zip64=True) as entry:
            entry.write(b"[")
            block = b" " * (1024 * 1024)
            for _ in range(80):  # 80 MiB of whitespace in about 80 KiB: a ratio of 1,000
                entry.write(block)
            entry.write(b"]")
    assert path.stat().st_size < 200 * 1024
    with path.open("rb") as fp, pytest.raises(ImportFormatError, match="unpacks to more than 67,108,864 bytes"):
        list(iter_items(fp, "omnivore"))


def test_a_zip_whose_entries_together_exceed_the_total_is_cut_off_while_streaming() -> None:
    padded = "[" + " " * 600_000 + json.dumps(article(0)) + "]"
    data = omnivore_zip({f"metadata_{n}_to_{n}.json": padded for n in range(4)})
    limits = ZipLimits(max_entries=10, max_entry_bytes=1_000_000, max_total_bytes=2_000_000)
    out: list[ImportItem] = []
    with pytest.raises(ImportFormatError, match="unpacks to more than 2,000,000 bytes"):
        out.extend(parse_omnivore(data, limits))
    assert len(out) == 3


def test_too_many_entries_are_refused_before_the_index_is_built() -> None:
    data = omnivore_zip({f"content/{n}.html": "" for n in range(50)} | {"metadata_0_to_0.json": [article(0)]})
    with pytest.raises(ImportFormatError, match="The ZIP has 51 entries; at most 50 are accepted"):
        list(parse_omnivore(data, ZipLimits(max_entries=50)))
    assert len(list(parse_omnivore(data, ZipLimits(max_entries=51)))) == 1


def test_an_entry_whose_header_lies_about_its_size_still_fails_clearly() -> None:
    data = omnivore_zip({"metadata_0_to_0.json": "[" + " " * 2_000_000 + "]"}).getvalue()
    central = data.rfind(b"PK\x01\x02")
    local = data.find(b"PK\x03\x04")
    forged = bytearray(data)
    forged[central + 24 : central + 28] = (100).to_bytes(4, "little")  # "unpacks to 100 bytes"
    forged[local + 22 : local + 26] = (100).to_bytes(4, "little")
    with pytest.raises(ImportFormatError, match="metadata_0_to_0.json"):
        list(parse_omnivore(io.BytesIO(bytes(forged)), ZipLimits(max_entry_bytes=1_000_000)))


def test_an_unzipped_metadata_file_is_read_and_detected() -> None:
    data = json.dumps([article(0, state="Archived", labels=["x"]), article(1)], indent=2).encode()
    items = list(iter_items(io.BytesIO(data)))
    assert [(item.line, item.url, item.is_archived, item.user_tags) for item in items] == [
        (1, "https://news.example/0", True, ("x",)),
        (2, "https://news.example/1", False, ()),
    ]


def test_a_non_zip_non_json_file_given_as_omnivore_fails_clearly() -> None:
    with pytest.raises(ImportFormatError, match="Invalid JSON"):
        list(iter_items(io.BytesIO(b"title,url\nx,y\n"), "omnivore"))


def test_a_zip64_directory_claiming_ten_million_entries_is_refused_with_the_default_limits() -> None:
    real = omnivore_zip({"metadata_0_to_0.json": [article(0)]}).getvalue()
    assert real[-22:-18] == b"PK\x05\x06"  # no archive comment
    eocd = real[-22:]
    cd_size, cd_offset = struct.unpack("<LL", eocd[12:20])
    body = real[:-22]
    zip64_at = len(body)
    zip64 = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 10_000_000, 10_000_000, cd_size, cd_offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, zip64_at, 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with pytest.raises(ImportFormatError, match="The ZIP has 10,000,000 entries; at most 100,000 are accepted"):
        list(iter_items(io.BytesIO(body + zip64 + locator + end), "omnivore"))
