"""The web app as a person uses it: first visit, add, list, search, edit, archive, delete and undo;
keyboard only; accessibility of the main views; screenshots of them for the docs."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect
from web_support import (
    DESKTOP,
    PHONE,
    add_link,
    axe_violations,
    describe,
    expect_status,
    open_library,
    row,
    screenshot,
)


async def test_first_visit_add_search_edit_archive_delete_undo(new_device: Any, site: Any) -> None:
    page = await new_device()
    # A first visit is a working library at once: no form, an empty list, everything synced.
    await expect(page.get_by_role("list", name="Bookmarks").get_by_role("listitem")).to_have_count(0)

    await add_link(page, "https://example.org/articles/rust-ownership?utm_source=feed")
    await expect(row(page, "example.org")).to_have_count(1)
    await expect_status(page, "Synced")

    # The same page again (another tracking parameter, www.) is recognised before saving.
    await page.get_by_role("textbox", name="URL").fill("https://www.example.org/articles/rust-ownership?utm_medium=x")
    await expect(page.get_by_text("Already saved")).to_be_visible()
    await page.get_by_role("textbox", name="URL").fill("")

    # Details: title, notes, tags.
    await row(page, "example.org").get_by_role("button", name="Details").click()
    details = page.get_by_role("region", name="Bookmark details")
    await details.get_by_role("textbox", name="Title").fill("Understanding ownership in Rust")
    await details.get_by_role("textbox", name="Notes").fill("Borrowing explained with diagrams")
    await details.get_by_role("textbox", name="Tags").fill("rust, learning")
    await details.get_by_role("textbox", name="Title").focus()  # leaving Tags saves it
    await expect(row(page, "Understanding ownership in Rust")).to_have_count(1)
    await expect(row(page, "Understanding ownership in Rust")).to_contain_text("learning")
    await details.get_by_role("button", name="Favorite").click()
    await expect(details.get_by_role("button", name="Unfavorite")).to_be_visible()
    await expect_status(page, "Synced")

    # Search (the server's, with its snippet) finds it by a note word; a miss shows nothing.
    search = page.get_by_role("searchbox", name="Search")
    await search.fill("diagrams")
    await expect(row(page, "Understanding ownership in Rust")).to_have_count(1)
    await expect(row(page, "Understanding ownership in Rust").locator("mark")).to_have_text("diagrams")
    await search.fill("tag:rust is:favorite")
    await expect(row(page, "Understanding ownership in Rust")).to_have_count(1)
    await search.fill("nothingmatchesthis")
    await expect(page.get_by_role("list", name="Bookmarks").get_by_role("listitem")).to_have_count(0)
    await search.fill("")

    # Archive: gone from All, shown under Archived.
    await details.get_by_role("button", name="Archive").click()
    await expect(details.get_by_role("button", name="Unarchive")).to_be_visible()
    await expect(row(page, "Understanding ownership in Rust")).to_have_count(0)
    nav = page.get_by_role("navigation", name="Library")
    await nav.get_by_role("link", name="Archived").click()
    await expect(row(page, "Understanding ownership in Rust")).to_have_count(1)

    # Delete, then undo from the toast: it comes back with what it had.
    await row(page, "Understanding ownership in Rust").get_by_role("button", name="Details").click()
    await page.get_by_role("region", name="Bookmark details").get_by_role("button", name="Delete").click()
    await expect(row(page, "Understanding ownership in Rust")).to_have_count(0)
    await page.get_by_role("button", name="Undo").click()
    await expect(row(page, "Understanding ownership in Rust")).to_have_count(1)
    await expect(row(page, "Understanding ownership in Rust")).to_contain_text("rust")
    await expect_status(page, "Synced")

    # A reload (a new session of the page) shows the same library from the server and local store.
    await page.reload()
    await open_library(page)
    await nav.get_by_role("link", name="Archived").click()
    await expect(row(page, "Understanding ownership in Rust")).to_have_count(1)
    assert page.errors == []


async def test_keyboard_only(new_device: Any) -> None:
    page = await new_device()
    await page.keyboard.press("n")
    await expect(page.get_by_role("textbox", name="URL")).to_be_focused()
    for n in range(3):
        await page.keyboard.type(f"https://keyboard.example/{n}")
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("list", name="Bookmarks").get_by_role("listitem")).to_have_count(n + 1)
    await page.keyboard.press("Escape")
    await page.locator("body").focus()
    await page.evaluate("document.activeElement.blur()")
    await page.keyboard.press("j")
    await page.keyboard.press("j")
    await page.keyboard.press("Enter")
    details = page.get_by_role("region", name="Bookmark details")
    await expect(details).to_contain_text("https://keyboard.example/1")
    await page.keyboard.press("Escape")
    await expect(details).to_have_count(0)
    await page.keyboard.press("/")
    await expect(page.get_by_role("searchbox", name="Search")).to_be_focused()
    await page.keyboard.press("Escape")
    await page.evaluate("document.activeElement.blur()")
    await page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    await expect(dialog).to_be_visible()
    await expect(dialog).to_contain_text("Search")
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)


async def test_collections_tree_create_rename_move_delete(new_device: Any) -> None:
    page = await new_device()
    await add_link(page, "https://collections.example/a")
    nav = page.get_by_role("navigation", name="Library")
    for name in ("Reading", "Work"):
        await nav.get_by_role("button", name="New collection").click()
        await nav.get_by_role("textbox", name="Name").fill(name)
        await nav.get_by_role("button", name="Create").click()
    tree = page.get_by_role("tree", name="Collections")
    await expect(tree.get_by_role("treeitem")).to_have_count(2)
    # File the bookmark into Work from its details; the tree counts it.
    await nav.get_by_role("link", name="All").click()
    await row(page, "collections.example").get_by_role("button", name="Details").click()
    await page.get_by_role("region", name="Bookmark details").get_by_role("checkbox", name="Work").check()
    await expect(tree.get_by_role("treeitem", name="Work")).to_contain_text("1")
    # Rename Work, move it into Reading, then delete Reading: Work moves up, the bookmark stays.
    await tree.get_by_role("treeitem", name="Work").click(position={"x": 12, "y": 12})
    await page.get_by_role("button", name="Rename").click()
    await page.get_by_role("textbox", name="New name").fill("Projects")
    await page.get_by_role("button", name="Save name").click()
    await expect(tree.get_by_role("treeitem", name="Projects")).to_have_count(1)
    await page.get_by_role("button", name="Move").click()
    await page.get_by_role("combobox", name="Put it in").select_option(label="Reading")
    await page.get_by_role("button", name="Move here").click()
    await expect(tree.get_by_role("treeitem", name="Reading").get_by_role("group")).to_contain_text("Projects")
    await tree.get_by_role("treeitem", name="Reading").click(position={"x": 12, "y": 12})
    page.once("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Delete collection").click()
    await expect(tree.get_by_role("treeitem")).to_have_count(1)
    await expect(tree.get_by_role("treeitem", name="Projects")).to_contain_text("1")
    await expect_status(page, "Synced")


async def test_bulk_select_with_shift_and_act(new_device: Any) -> None:
    page = await new_device()
    for n in range(5):
        await add_link(page, f"https://bulk.example/{n}")
    items = page.get_by_role("list", name="Bookmarks").get_by_role("listitem")
    await expect(items).to_have_count(5)
    await items.nth(0).get_by_role("checkbox", name="Select").click()
    await items.nth(2).get_by_role("checkbox", name="Select").click(modifiers=["Shift"])
    toolbar = page.get_by_role("toolbar", name="Selection")
    await expect(toolbar).to_contain_text("3 selected")
    await toolbar.get_by_role("textbox", name="Tag to add").fill("batch")
    await toolbar.get_by_role("button", name="Add tag").click()
    await expect(items.filter(has_text="batch")).to_have_count(3)
    await toolbar.get_by_role("button", name="Select all 5 matching").click()
    await expect(toolbar).to_contain_text("5 selected")
    await toolbar.get_by_role("button", name="Archive").click()
    await expect(items).to_have_count(0)
    await expect_status(page, "Synced")


async def test_accessibility_and_screenshots_of_the_main_views(new_device: Any, site: Any) -> None:
    for scheme in ("light", "dark"):
        for label, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            page = await new_device(viewport=viewport, color_scheme=scheme)
            for n, (path, title) in enumerate(
                [
                    ("/articles/1", "A field guide to tidy bookmarks"),
                    ("/articles/2", "Reading later, actually"),
                    ("/articles/3", "Search that understands you"),
                ]
            ):
                await add_link(page, f"https://read.example{path}")
                await expect(row(page, "read.example")).to_have_count(n + 1)
                await row(page, "read.example").first.get_by_role("button", name="Details").click()
                details = page.get_by_role("region", name="Bookmark details")
                await details.get_by_role("textbox", name="Title").fill(title)
                await details.get_by_role("textbox", name="Tags").fill(f"guide, topic{n}")
                await details.get_by_role("button", name="Close details").click()
            await expect_status(page, "Synced")
            assert await axe_violations(page) == [], describe(await axe_violations(page))
            await screenshot(page, f"list-{scheme}-{label}")
            await row(page, "Reading later").get_by_role("button", name="Details").click()
            assert await axe_violations(page) == [], describe(await axe_violations(page))
            await screenshot(page, f"details-{scheme}-{label}")
            await page.get_by_role("region", name="Bookmark details").get_by_role("button", name="Read").click()
            await expect(page.get_by_role("region", name="Reader")).to_be_visible()
            assert await axe_violations(page) == [], describe(await axe_violations(page))
            await page.get_by_role("button", name="Close reader").click()
            await page.get_by_role("button", name="Close details").click()
            await page.get_by_role("button", name="Settings").click()
            await expect(page.get_by_role("dialog", name="Settings")).to_be_visible()
            await expect(page.get_by_role("checkbox", name="Use AI enrichment")).to_be_enabled()
            assert await axe_violations(page) == [], describe(await axe_violations(page))
            await screenshot(page, f"settings-{scheme}-{label}")
            await page.get_by_role("dialog", name="Settings").get_by_role("button", name="Close").click()
            if label == "phone":
                await page.get_by_role("button", name="Menu").click()
            await page.get_by_role("button", name="Import & export").click()
            assert await axe_violations(page) == [], describe(await axe_violations(page))
            await screenshot(page, f"import-{scheme}-{label}")
            await page.context.close()
