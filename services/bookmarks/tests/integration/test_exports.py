"""GET /v1/exports (docs/api-guide.md, section 13): the three formats, the JSON round trip through the import parsers,
streaming in batches, one snapshot, and hostile parameters."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, update

from bookmarks.exports import stream
from bookmarks.imports.formats import iter_items
from bookmarks.store.tables import bookmarks as bookmarks_table
from common.urls import normalize_url

TITLE = 'Fish & "Chips" <b>\n2nd line'


async def put_bm(http: httpx.AsyncClient, user: Any, bid: str, body: dict[str, Any]) -> None:
    response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text


async def put_col(http: httpx.AsyncClient, user: Any, cid: str, body: dict[str, Any]) -> None:
    response = await http.put(f"/v1/collections/{cid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text


async def make_library(http: httpx.AsyncClient, bookmarks_app: Any, user: Any) -> None:
    """Nested collections, an empty one, a deleted one; bookmarks in none, one and several collections,
    with every client field, a deleted bookmark, and one with server enrichment fields."""
    await put_col(http, user, "work", {"name": "Work"})
    await put_col(http, user, "proj", {"name": "Projects", "parentId": "work"})
    await put_col(http, user, "deep", {"name": "Deep & <Dark>", "parentId": "proj"})
    await put_col(http, user, "empty", {"name": "Empty"})
    await put_col(http, user, "gone", {"name": "Gone"})
    assert (await http.delete("/v1/collections/gone", headers=user.headers)).status_code == 204
    await put_bm(
        http,
        user,
        "top",
        {
            "url": "https://top.example/a?x=1&y=2",
            "title": TITLE,
            "description": "A <desc>\nover lines",
            "notes": "my notes\nline 2",
            "userTags": ["rust", "web dev", "=cmd"],
            "isFavorite": True,
            "clientSavedAt": "2024-03-01T10:00:00Z",
            "lastOpenedAt": "2024-03-02T11:00:00Z",
            "thumbnailUrl": "https://img.example/t.png",
        },
    )
    await put_bm(
        http,
        user,
        "in-deep",
        {
            "url": "https://deep.example/",
            "title": "-1 weird title",
            "collectionIds": ["deep", "work"],
            "isArchived": True,
            "userTags": ["@home"],
        },
    )
    await put_bm(http, user, "in-work", {"url": "https://work.example/", "collectionIds": ["work"]})
    await put_bm(http, user, "unknown-col", {"url": "https://unknown.example/", "collectionIds": ["nope", "proj"]})
    await put_bm(http, user, "deleted", {"url": "https://deleted.example/"})
    assert (await http.delete("/v1/bookmarks/deleted", headers=user.headers)).status_code == 204
    async with bookmarks_app.state.sessions() as session, session.begin():
        await session.execute(
            update(bookmarks_table)
            .where(bookmarks_table.c.owner_uid == user.id, bookmarks_table.c.client_bookmark_id == "in-work")
            .values(
                summary="Server summary",
                tags=["ai", "ml"],
                enrichment_status="completed",
                title="Enriched title",
                enriched_at=datetime(2024, 5, 1, tzinfo=UTC),
            )
        )


async def export(http: httpx.AsyncClient, user: Any, fmt: str) -> httpx.Response:
    response = await http.get("/v1/exports", params={"format": fmt}, headers=user.headers)
    assert response.status_code == 200, response.text
    return response


@pytest.mark.parametrize(
    "params",
    [{}, {"format": ""}, {"format": "xml"}, {"format": "JSON"}, {"format": "x" * 5000}, {"format": "json\x00"}],
)
async def test_bad_or_missing_format_is_400(http: httpx.AsyncClient, user: Any, params: dict[str, str]) -> None:
    response = await http.get("/v1/exports", params=params, headers=user.headers)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid-request"


async def test_export_needs_a_token(http: httpx.AsyncClient) -> None:
    response = await http.get("/v1/exports", params={"format": "json"})
    assert response.status_code == 401 and response.json()["code"] == "unauthorized"


async def test_empty_library_exports_valid_files(http: httpx.AsyncClient, user: Any) -> None:
    data = (await export(http, user, "json")).json()
    assert data["version"] == 1 and data["collections"] == [] and data["bookmarks"] == []
    text = (await export(http, user, "netscape")).text
    assert text.startswith("<!DOCTYPE NETSCAPE-Bookmark-file-1>") and text.rstrip().endswith("</DL><p>")
    assert (await export(http, user, "csv")).text.count("\n") == 1


async def test_json_export_holds_every_field_of_the_library(
    http: httpx.AsyncClient, bookmarks_app: Any, user: Any, sync_lib: Any
) -> None:
    await make_library(http, bookmarks_app, user)
    response = await export(http, user, "json")
    assert response.headers["content-type"] == "application/json"
    disposition = response.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="bookmarks-') and disposition.endswith('.json"')
    assert response.headers["cache-control"] == "no-store"
    text = response.text
    assert list(json.loads(text)) == ["version", "exportedAt", "collections", "bookmarks"]
    lines = text.splitlines()
    assert lines[-1] == "]}" and sum(line.startswith('{"clientBookmarkId"') for line in lines) == 4  # one per line
    data = json.loads(text)
    library = await sync_lib(user)
    # Every field the API shows, except the owner's id, and its highlights; collections parents first.
    assert {b["clientBookmarkId"]: b for b in data["bookmarks"]} == {
        bid: {k: v for k, v in record.items() if k != "ownerUid"} | {"highlights": []}
        for bid, record in library.bookmarks.items()
    }
    assert [c["id"] for c in data["collections"]] == ["empty", "work", "proj", "deep"]
    assert {c["id"]: c for c in data["collections"]} == library.collections
    enriched = next(b for b in data["bookmarks"] if b["clientBookmarkId"] == "in-work")
    assert enriched["summary"] == "Server summary" and enriched["tags"] == ["ai", "ml"]


async def test_json_export_round_trips_through_the_import_parser(
    http: httpx.AsyncClient, bookmarks_app: Any, user: Any, sync_lib: Any
) -> None:
    await make_library(http, bookmarks_app, user)
    library = await sync_lib(user)
    items = list(iter_items(io.BytesIO((await export(http, user, "json")).content)))
    assert all(item.valid for item in items), items
    # The one dangling collection id (the API allows one) is dropped with a warning; nothing else is repaired.
    assert {item.client_bookmark_id: item.warnings for item in items if item.warnings} == {
        "unknown-col": ("collection id(s) nope not in the export; not filed there",)
    }
    paths = {"work": ("Work",), "proj": ("Work", "Projects"), "deep": ("Work", "Projects", "Deep & <Dark>")}
    assert {item.client_bookmark_id for item in items} == set(library.bookmarks)
    for item in items:
        b = library.bookmarks[item.client_bookmark_id or ""]
        assert item.url == b["url"] and item.normalized_url == b["normalizedUrl"] and item.domain == b["domain"]
        assert (item.title, item.description, item.notes) == (b["title"], b["description"], b["notes"])
        assert item.user_tags == tuple(b["userTags"])
        assert item.collection_paths == tuple(paths[c] for c in b["collectionIds"] if c in paths)
        assert (item.is_favorite, item.is_archived) == (b["isFavorite"], b["isArchived"])
        assert item.saved_at == _ts(b["clientSavedAt"]) and item.last_opened_at == _ts(b["lastOpenedAt"])
        assert item.thumbnail_url == b["thumbnailUrl"]


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


async def test_csv_export_is_one_safe_row_per_bookmark(http: httpx.AsyncClient, bookmarks_app: Any, user: Any) -> None:
    await make_library(http, bookmarks_app, user)
    response = await export(http, user, "csv")
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"].endswith('.csv"')
    assert response.content.startswith("\ufeff".encode())
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"), newline="")))
    by_id = {row["client_bookmark_id"]: row for row in rows}
    assert set(by_id) == {"top", "in-deep", "in-work", "unknown-col"}
    top = by_id["top"]
    assert top["title"] == TITLE and top["notes"] == "my notes\nline 2"  # quoted newlines survive
    assert top["tags"] == "rust|web dev|=cmd"  # the cell does not start with "=": left as it is
    assert top["favorite"] == "true" and top["archived"] == "false"
    assert top["saved_at"] == "2024-03-01T10:00:00.000000Z" and top["time_added"] == "1709287200"
    deep = by_id["in-deep"]
    assert deep["title"] == "'-1 weird title" and deep["tags"] == "'@home"  # formula-looking cells
    assert deep["collections"] == "Work/Projects/Deep & <Dark>|Work" and deep["archived"] == "true"
    assert by_id["in-work"]["ai_tags"] == "ai|ml" and by_id["in-work"]["summary"] == "Server summary"
    assert by_id["unknown-col"]["collections"] == "Work/Projects"


async def test_netscape_export_nests_folders_and_escapes(
    http: httpx.AsyncClient, bookmarks_app: Any, user: Any
) -> None:
    await make_library(http, bookmarks_app, user)
    response = await export(http, user, "netscape")
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-disposition"].endswith('.html"')
    text = response.text
    assert text.startswith("<!DOCTYPE NETSCAPE-Bookmark-file-1>")
    assert '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">' in text
    assert text.count("<DL><p>") == text.count("</DL><p>") == 5  # the root and four folders
    assert "Deep &amp; &lt;Dark&gt;</H3>" in text and "Gone" not in text and "deleted.example" not in text
    assert 'HREF="https://top.example/a?x=1&amp;y=2"' in text and 'TAGS="rust,web dev,=cmd"' in text
    assert '>Fish &amp; "Chips" &lt;b&gt;&#10;2nd line</A>' in text
    assert 'ADD_DATE="1709287200"' in text and "<DD>A &lt;desc&gt;&#10;over lines" in text
    # Read back by the import parser: each bookmark in its first live collection's folder.
    items = {item.url: item for item in iter_items(io.BytesIO(response.content))}
    assert items["https://deep.example/"].collection_path == ("Work", "Projects", "Deep & <Dark>")
    assert items["https://work.example/"].collection_path == ("Work",)
    assert items["https://unknown.example/"].collection_path == ("Work", "Projects")
    top = items["https://top.example/a?x=1&y=2"]
    assert top.collection_path == () and top.user_tags == ("rust", "web dev", "=cmd")
    # Browsers (and the parser) fold whitespace in element text: the newline reads back as a space.
    assert " ".join((top.title or "").split()) == " ".join(TITLE.split())
    assert " ".join((top.description or "").split()) == "A <desc> over lines"
    assert top.saved_at == datetime(2024, 3, 1, 10, tzinfo=UTC)


async def bulk_load(bookmarks_app: Any, owner: uuid.UUID, count: int, collection_ids: list[str] | None = None) -> None:
    """``count`` bookmarks written straight into the table (the API is not what is measured here)."""
    base = datetime(2024, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(count):
        url = f"https://bulk{i % 97}.example/page/{i}"
        normalized = normalize_url(url)
        ts = base + timedelta(seconds=i)
        folder = [collection_ids[i % len(collection_ids)]] if collection_ids and i % 3 else []
        rows.append(
            {
                "owner_uid": owner,
                "client_bookmark_id": f"bulk-{i:06d}",
                "url": url,
                "normalized_url": normalized.url,
                "domain": normalized.domain,
                "title": f"Page {i}",
                "created_at": ts,
                "updated_at": ts,
                "collection_ids": folder,
                "user_tags": ["bulk"],
            }
        )
    async with bookmarks_app.state.sessions() as session, session.begin():
        for start in range(0, count, 1000):
            await session.execute(insert(bookmarks_table), rows[start : start + 1000])


async def asgi_get(app: Any, target: str, headers: dict[str, str]) -> tuple[int, list[bytes]]:
    """One GET straight through the ASGI interface (httpx's ASGITransport joins the body): the status
    and every body message the app sent, as sent."""
    path, _, query = target.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("bookmarks.test", 80),
    }
    sent: list[dict[str, Any]] = []
    requested, finished = False, asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await finished.wait()  # the client stays connected until the response is complete
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            finished.set()

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, [m["body"] for m in sent if m["type"] == "http.response.body" and m.get("body")]


@pytest.mark.parametrize("fmt", ["json", "csv", "netscape"])
async def test_a_big_export_streams_in_batches(
    http: httpx.AsyncClient, bookmarks_app: Any, user: Any, fmt: str
) -> None:
    await put_col(http, user, "a", {"name": "A"})
    await put_col(http, user, "b", {"name": "B", "parentId": "a"})
    await bulk_load(bookmarks_app, user.id, 2500, ["a", "b"])
    status, chunks = await asgi_get(bookmarks_app, f"/v1/exports?format={fmt}", user.headers)
    assert status == 200
    # head, one chunk per batch of 1,000 rows, tail: the app sends the body as it reads, never built whole.
    assert len(chunks) >= 4, [len(c) for c in chunks]
    assert max(len(c) for c in chunks) < len(b"".join(chunks)) / 2
    items = list(iter_items(io.BytesIO(b"".join(chunks))))
    assert len(items) == 2500 and all(item.valid for item in items)
    if fmt != "csv":
        in_b = [item for item in items if item.collection_path == ("A", "B")]
        assert len(in_b) == len([i for i in range(2500) if i % 3 and i % 2])


async def test_export_reads_one_snapshot(http: httpx.AsyncClient, bookmarks_app: Any, user: Any) -> None:
    """A write committed after the export started is not in it (REPEATABLE READ snapshot)."""
    await put_bm(http, user, "before", {"url": "https://before.example/"})
    opened = await stream.open_export(bookmarks_app.state.sessions, user.id, "json", batch_rows=1)
    body = opened.body()
    head = await anext(body)
    await put_bm(http, user, "after", {"url": "https://after.example/"})
    await put_col(http, user, "late", {"name": "Late"})
    rest = b"".join([chunk async for chunk in body])
    data = json.loads(head + rest)
    assert [b["clientBookmarkId"] for b in data["bookmarks"]] == ["before"] and data["collections"] == []


async def test_exports_do_not_leak_between_users(http: httpx.AsyncClient, bookmarks_app: Any, make_user: Any) -> None:
    alice, bob = make_user(), make_user()
    await put_bm(http, alice, "mine", {"url": "https://alice.example/"})
    await put_col(http, alice, "c", {"name": "Alice's"})
    for fmt in ("json", "csv", "netscape"):
        text = (await export(http, bob, fmt)).text
        assert "alice" not in text.lower()


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no Chromium at /usr/bin/chromium")
async def test_netscape_export_opens_in_a_browser(
    http: httpx.AsyncClient, bookmarks_app: Any, user: Any, tmp_path: Any
) -> None:
    playwright_api = pytest.importorskip("playwright.async_api")
    await make_library(http, bookmarks_app, user)
    await bulk_load(bookmarks_app, user.id, 300, ["work", "deep"])
    path = tmp_path / "bookmarks.html"
    path.write_bytes((await export(http, user, "netscape")).content)
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            await page.goto(path.as_uri())
            links = await page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
            folders = await page.eval_on_selector_all("h3", "els => els.map(e => e.textContent)")
            title = await page.eval_on_selector("a[tags='rust,web dev,=cmd']", "e => e.textContent")
        finally:
            await browser.close()
    assert len(links) == 304 and "https://top.example/a?x=1&y=2" in links
    assert sorted(folders) == ["Deep & <Dark>", "Empty", "Projects", "Work"]
    assert title == 'Fish & "Chips" <b>\n2nd line'


CLIENT_FIELDS = (
    "url",
    "title",
    "description",
    "notes",
    "userTags",
    "isFavorite",
    "isArchived",
    "clientSavedAt",
    "lastOpenedAt",
    "thumbnailUrl",
    "normalizedUrl",
    "domain",
)


def collection_paths(library: Any) -> dict[str, tuple[str, ...]]:
    """Collection id → name path, from a synced library."""

    def path(cid: str) -> tuple[str, ...]:
        record = library.collections[cid]
        return (*path(record["parentId"]), record["name"]) if record["parentId"] else (record["name"],)

    return {cid: path(cid) for cid in library.collections}


@pytest.mark.asyncio(loop_scope="session")
async def test_json_export_round_trips_through_import_into_an_empty_account(
    http: httpx.AsyncClient, bookmarks_app: Any, make_user: Any, sync_lib: Any
) -> None:
    alice, bob = make_user(), make_user()
    await make_library(http, bookmarks_app, alice)
    exported = (await export(http, alice, "json")).content
    response = await http.post("/v1/imports", headers=bob.headers, files={"file": ("bookmarks.json", exported)})
    assert response.status_code == 202, response.text
    import_id = response.json()["data"]["id"]
    for _ in range(1200):
        record = (await http.get(f"/v1/imports/{import_id}", headers=bob.headers)).json()["data"]
        if record["status"] in ("completed", "failed"):
            break
        await asyncio.sleep(0.05)
    assert record["status"] == "completed" and record["format"] == "json", record
    source, copy = await sync_lib(alice), await sync_lib(bob)
    source_paths, copy_paths = collection_paths(source), collection_paths(copy)
    # Every collection, same names and nesting, the empty one too (the job creates the export's list first).
    assert sorted(copy_paths.values()) == sorted(source_paths.values())
    assert ("Empty",) in copy_paths.values()
    by_url = {b["normalizedUrl"]: b for b in copy.bookmarks.values()}
    assert set(by_url) == {b["normalizedUrl"] for b in source.bookmarks.values()}
    for original in source.bookmarks.values():
        imported = by_url[original["normalizedUrl"]]
        for name in CLIENT_FIELDS:
            assert imported[name] == original[name], (original["clientBookmarkId"], name)
        assert [copy_paths[c] for c in imported["collectionIds"]] == [
            source_paths[c] for c in original["collectionIds"] if c in source_paths
        ], original["clientBookmarkId"]


async def _export_under_way(
    http: httpx.AsyncClient, bookmarks_app: Any, user: Any, fmt: str
) -> tuple[stream.Export, AsyncIterator[bytes]]:
    """An export of six bookmarks, one per batch, read up to its first batch."""
    for n in range(6):
        await put_bm(http, user, f"{fmt}{n}", {"url": f"https://{fmt}{n}.under-way.example/"})
    opened = await stream.open_export(bookmarks_app.state.sessions, user.id, fmt, batch_rows=1)
    body = opened.body()
    await anext(body)  # the head
    await anext(body)  # the first batch
    return opened, body


async def test_an_export_stopped_early_ends_its_snapshot(
    http: httpx.AsyncClient, bookmarks_app: Any, user: Any
) -> None:
    """A client that goes away mid-file: the snapshot's transaction ends with the stream."""
    opened, body = await _export_under_way(http, bookmarks_app, user, "csv")
    assert opened.session.in_transaction()
    await body.aclose()  # what the server does when the client disconnects
    assert not opened.session.in_transaction()


async def test_an_export_whose_read_fails_ends_with_the_failure(
    http: httpx.AsyncClient, bookmarks_app: Any, user: Any
) -> None:
    """The database connection dies mid-export: the stream ends with the error (the client sees a cut
    response, never a file that looks whole)."""
    from sqlalchemy import text

    opened, body = await _export_under_way(http, bookmarks_app, user, "json")
    async with bookmarks_app.state.sessions() as other:
        killed = await other.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'"
            )
        )
        assert killed.all()
    with pytest.raises(Exception):  # noqa: B017, PT011 - the driver's own error for a dead connection
        async for chunk in body:
            assert not chunk.startswith(b"\n]}")  # never the tail of a whole file
    assert not opened.session.in_transaction()
