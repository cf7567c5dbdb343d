"""Import a Pocket CSV from the browser: the progress bar, the per-item result, and the imported
bookmarks in the list (through delta); the export links download the library."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import expect
from web_support import expect_status, row

POCKET_CSV = """title,url,time_added,tags,status
Deep work,https://import.example/deep-work,1700000000,focus|books,unread
Slow productivity,https://import.example/slow,1700000100,books,archive
Not a link,pocket://item/1,1700000200,,unread
"""


async def test_pocket_csv_import_shows_progress_and_every_item(new_device: Any, tmp_path: Path) -> None:
    page = await new_device()
    path = tmp_path / "pocket.csv"
    path.write_text(POCKET_CSV, encoding="utf-8")
    await page.get_by_role("button", name="Import & export").click()
    dialog = page.get_by_role("dialog", name="Import & export")
    async with page.expect_file_chooser() as chooser:
        await dialog.get_by_role("button", name="Import").click()
    await (await chooser.value).set_files(str(path))
    progress = dialog.get_by_role("progressbar", name="Import progress")
    await expect(progress).to_be_visible()
    await expect(dialog).to_contain_text("Done: 2 added, 0 merged, 0 already there, 1 skipped.", timeout=30_000)
    await expect(progress).to_have_attribute("value", "3")
    items = dialog.get_by_role("table")
    await expect(items.get_by_role("row")).to_have_count(4)  # header + one per item
    await expect(items).to_contain_text("pocket://item/1")
    await expect(items).to_contain_text("Skipped")

    # The export links download what the library now holds.
    async with page.expect_download() as download_info:
        await dialog.get_by_role("link", name="Export CSV").click()
    download = await download_info.value
    exported = Path(await download.path()).read_text(encoding="utf-8-sig")
    assert "https://import.example/deep-work" in exported and "focus|books" in exported
    for name in ("Export HTML", "Export JSON"):
        await expect(dialog.get_by_role("link", name=name)).to_be_visible()
    await dialog.get_by_role("button", name="Close").click()

    # The imported bookmarks arrive through delta: one in All, the archived one under Archived.
    await expect(row(page, "Deep work")).to_have_count(1, timeout=20_000)
    await expect(row(page, "Deep work")).to_contain_text("focus")
    await page.get_by_role("navigation", name="Library").get_by_role("link", name="Archived").click()
    await expect(row(page, "Slow productivity")).to_have_count(1)
    await expect_status(page, "Synced")
