"""The pure rules that clean one imported item."""

from __future__ import annotations

from datetime import UTC, datetime

from bookmarks.imports.formats import ImportItem, validate_item
from bookmarks.imports.formats.model import clean_path, clean_tags, clean_text, from_unix, parse_iso


def test_tags_follow_the_user_tag_rules_repairing_instead_of_refusing() -> None:
    warnings: list[str] = []
    raw = ["  Dev ", "", "dev", "a\x07b", "x" * 70, *[f"t{n}" for n in range(60)]]
    tags = clean_tags(raw, warnings)
    assert tags[:3] == ("Dev", "ab", "x" * 64)
    assert len(tags) == 50
    assert warnings == ["tag shortened to 64 characters", "only the first 50 of 63 tags kept"]


def test_collection_paths_drop_blank_names_and_keep_ten_levels() -> None:
    warnings: list[str] = []
    assert clean_path([" A ", "", "B\tC"], warnings) == ("A", "B C")
    assert clean_path(["n"] * 10, warnings) == ("n",) * 10 and warnings == []
    assert clean_path(["n"] * 3, warnings, extra_depth=9) == ("n",) * 3
    assert warnings == ["folder nested 12 levels deep; kept its first 10 levels"]
    assert clean_path(["x" * 300], []) == ("x" * 200,)


def test_text_is_trimmed_blank_is_none_and_long_is_cut() -> None:
    warnings: list[str] = []
    assert clean_text("  \n ", 10, "title", warnings) is None
    assert clean_text(" a\x00b ", 10, "title", warnings) == "ab"
    assert clean_text("abcdefghijkl", 10, "notes", warnings) == "abcdefghij"
    assert warnings == ["notes shortened to 10 characters"]


def test_unix_seconds_milliseconds_and_junk() -> None:
    assert from_unix("1700000000") == datetime.fromtimestamp(1700000000, tz=UTC)
    assert from_unix("1700000000123") == datetime.fromtimestamp(1700000000, tz=UTC)
    assert from_unix(" 1700000000 ") == datetime.fromtimestamp(1700000000, tz=UTC)
    for junk in (None, "", "0", "-5", "1.5e9", "abc", "9" * 40):
        assert from_unix(junk) is None


def test_iso_dates_with_z_offsets_naive_and_junk() -> None:
    assert parse_iso("2024-10-30T12:39:28.023Z") == datetime(2024, 10, 30, 12, 39, 28, 23000, tzinfo=UTC)
    assert parse_iso("2024-10-30T14:39:28+02:00") == datetime(2024, 10, 30, 12, 39, 28, tzinfo=UTC)
    assert parse_iso("2024-10-30 12:00:00") == datetime(2024, 10, 30, 12, tzinfo=UTC)
    assert parse_iso("1629980125") == datetime.fromtimestamp(1629980125, tz=UTC)
    for junk in (None, 5, "", "yesterday", "2024-13-45"):
        assert parse_iso(junk) is None


def test_validate_item_checks_the_url_with_the_shared_normalization() -> None:
    ok = validate_item(ImportItem(line=1, url="HTTPS://www.Example.COM:443/a?utm_source=x&gclid=y"))
    assert (ok.reason, ok.normalized_url, ok.domain) == (None, "https://example.com/a", "example.com")
    assert (
        validate_item(ImportItem(line=1, url="ftp://example.com/")).reason == "URL must start with http:// or https://."
    )
    assert validate_item(ImportItem(line=1, url="https://")).reason is not None
    assert (
        validate_item(ImportItem(line=1, url="https://a.example/" + "x" * 2100)).reason
        == "URL is longer than 2048 characters."
    )
    assert validate_item(ImportItem(line=1, url="   ")).reason == "The item has no URL."
    already = ImportItem(line=1, url="https://a.example/", reason="earlier problem")
    assert validate_item(already) == already


def test_the_first_collection_path_is_the_collection_path() -> None:
    item = ImportItem(line=1, url="https://a.example/", collection_paths=(("A", "B"), ("C",)))
    assert item.collection_path == ("A", "B")
    assert ImportItem(line=1, url="x").collection_path == ()


def test_an_invalid_items_url_is_cut_for_the_report() -> None:
    item = validate_item(ImportItem(line=1, url="https://a.example/" + "x" * 100_000))
    assert item.reason == "URL is longer than 2048 characters." and len(item.url) == 2048
