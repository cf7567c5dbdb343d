"""POST/GET /v1/imports and the import job (docs/api-guide.md, section 13) on the real PostgreSQL and broker.

The job runs in the service's own background worker (started by the app's lifespan), exactly as in
production; tests upload, then poll the Import record until it is finished.
"""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from typing import Any

import httpx
import pytest

from .conftest import User, sync_library

pytestmark = pytest.mark.asyncio(loop_scope="session")

NETSCAPE = b"""<!DOCTYPE NETSCAPE-Bookmark-file-1>
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p>
    <DT><H3>Bookmarks Toolbar</H3>
    <DL><p>
        <DT><A HREF="https://example.com/a" ADD_DATE="1700000000" TAGS="one,two">Page A</A>
        <DD>About page A
        <DT><H3>Reading</H3>
        <DL><p>
            <DT><A HREF="https://example.com/b?utm_source=x">Page B</A>
        </DL><p>
    </DL><p>
    <DT><A HREF="javascript:alert(1)">Bookmarklet</A>
    <DT><A HREF="https://EXAMPLE.com/a" TAGS="three">Page A again</A>
    <DT><A HREF="https://example.com/known" TAGS="new">Known page</A>
</DL><p>
"""


async def upload(
    http: httpx.AsyncClient, user: User, content: bytes, fmt: str | None = None, name: str = "export.html"
) -> httpx.Response:
    data = {"format": fmt} if fmt is not None else None
    return await http.post("/v1/imports", headers=user.headers, files={"file": (name, content)}, data=data)


async def finished(http: httpx.AsyncClient, user: User, import_id: str) -> dict[str, Any]:
    """The Import record once its job has ended (the worker runs in the app's process)."""
    for _ in range(1200):
        response = await http.get(f"/v1/imports/{import_id}", headers=user.headers)
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()["data"]
        if record["status"] in ("completed", "failed"):
            return record
        await asyncio.sleep(0.05)
    raise AssertionError(f"import {import_id} did not finish: {record}")


async def run_import(http: httpx.AsyncClient, user: User, content: bytes, fmt: str | None = None) -> dict[str, Any]:
    response = await upload(http, user, content, fmt)
    assert response.status_code == 202, response.text
    return await finished(http, user, response.json()["data"]["id"])


async def report(http: httpx.AsyncClient, user: User, import_id: str) -> list[dict[str, Any]]:
    response = await http.get(f"/v1/imports/{import_id}/report", headers=user.headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/jsonl")
    return [json.loads(line) for line in response.text.splitlines()]


async def test_a_netscape_import_has_every_outcome_and_lands_in_delta(http: httpx.AsyncClient, user: User) -> None:
    known = {"url": "https://example.com/known", "title": "Mine", "userTags": ["kept"]}
    assert (await http.put("/v1/bookmarks/known-1", json=known, headers=user.headers)).status_code == 200

    response = await upload(http, user, NETSCAPE)
    assert response.status_code == 202
    queued = response.json()["data"]
    assert queued["status"] in ("queued", "running", "completed")
    record = await finished(http, user, queued["id"])

    assert record["status"] == "completed" and record["error"] is None
    assert record["format"] == "netscape"
    assert (record["total"], record["processed"]) == (5, 5)
    assert (record["created"], record["updated"], record["unchanged"], record["invalid"]) == (2, 2, 0, 1)
    assert record["finishedAt"] is not None

    lines = await report(http, user, queued["id"])
    assert [r["outcome"] for r in lines] == ["created", "created", "invalid", "updated", "updated"]
    assert [r["line"] for r in lines] == [8, 12, 15, 16, 17]
    assert lines[2]["reason"] and lines[2]["clientBookmarkId"] is None
    assert lines[3]["clientBookmarkId"] == lines[0]["clientBookmarkId"]  # the repeat merged into the first
    assert lines[4]["clientBookmarkId"] == "known-1"

    library = await sync_library(http, user)
    names = {c["id"]: (c["name"], c["parentId"]) for c in library.collections.values()}
    toolbar = next(i for i, (n, p) in names.items() if n == "Bookmarks Toolbar" and p is None)
    reading = next(i for i, (n, p) in names.items() if n == "Reading" and p == toolbar)
    page_a = library.bookmarks[lines[0]["clientBookmarkId"]]
    assert page_a["userTags"] == ["one", "two", "three"]
    assert page_a["collectionIds"] == [toolbar]
    assert page_a["title"] == "Page A" and page_a["description"] == "About page A"
    assert library.bookmarks[lines[1]["clientBookmarkId"]]["collectionIds"] == [reading]
    mine = library.bookmarks["known-1"]
    assert mine["title"] == "Mine" and mine["userTags"] == ["kept", "new"]  # tags added, title kept


async def test_importing_the_same_file_twice_creates_nothing_the_second_time(
    http: httpx.AsyncClient, user: User
) -> None:
    first = await run_import(http, user, NETSCAPE)
    before = await sync_library(http, user)
    second = await run_import(http, user, NETSCAPE)

    assert (first["created"], first["updated"], first["invalid"]) == (3, 1, 1)
    assert (second["created"], second["updated"], second["unchanged"], second["invalid"]) == (0, 0, 4, 1)
    after = await sync_library(http, user, before)
    assert after.bookmarks == before.bookmarks and after.collections == before.collections
    assert len(after.bookmarks) == 3 and len(after.collections) == 2


async def test_pocket_csv_keeps_archived_state_and_reports_its_format(http: httpx.AsyncClient, user: User) -> None:
    csv = (
        b"title,url,time_added,tags,status\r\n"
        b'"Great, work","https://example.org/great",1689000000,essays|careers,archive\r\n'
        b"Other,https://example.org/other,1690000000,,unread\r\n"
        b"Bad,ftp://example.org/file,1690000000,,unread\r\n"
    )
    record = await run_import(http, user, csv)
    assert record["format"] == "pocket-csv"
    assert (record["created"], record["invalid"]) == (2, 1)
    lines = await report(http, user, record["id"])
    assert [r["line"] for r in lines] == [2, 3, 4]
    library = await sync_library(http, user)
    great = library.bookmarks[lines[0]["clientBookmarkId"]]
    assert great["isArchived"] is True and great["userTags"] == ["essays", "careers"]
    assert great["title"] == "Great, work" and great["clientSavedAt"].startswith("2023-07-10")
    assert library.bookmarks[lines[1]["clientBookmarkId"]]["isArchived"] is False


async def test_another_users_import_is_not_found(http: httpx.AsyncClient, make_user: Any) -> None:
    owner, other = make_user(), make_user()
    record = await run_import(http, owner, NETSCAPE)
    for path in (f"/v1/imports/{record['id']}", f"/v1/imports/{record['id']}/report", "/v1/imports/not-a-uuid"):
        response = await http.get(path, headers=other.headers)
        assert response.status_code == 404
        assert response.json()["code"] == "not-found"


async def test_an_unrecognised_file_fails_with_a_message(http: httpx.AsyncClient, user: User) -> None:
    record = await run_import(http, user, b"just some words\nand more words\n")
    assert record["status"] == "failed"
    assert "not a recognised export" in record["error"]
    assert record["format"] == "auto"


async def test_a_zip_bomb_fails_the_import_with_an_error(http: httpx.AsyncClient, user: User) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("metadata_0_to_1.json", "w", force_zip64=True) as entry:
            entry.write(b"[")
            for _ in range(80):  # 80 MiB of whitespace in about 80 KiB
                entry.write(b" " * (1024 * 1024))
            entry.write(b"]")
    record = await run_import(http, user, buffer.getvalue())
    assert record["status"] == "failed"
    assert "unpacks to more than" in record["error"]
    assert record["created"] == 0
    assert (await sync_library(http, user)).bookmarks == {}


@pytest.mark.parametrize(
    ("headers", "body", "message"),
    [
        ({"Content-Type": "application/json"}, b"{}", "multipart/form-data"),
        ({"Content-Type": "multipart/form-data"}, b"x", "multipart/form-data"),  # no boundary
        ({"Content-Type": "multipart/form-data; boundary=XX"}, b"garbage without boundary", "malformed"),
        (
            {"Content-Type": "multipart/form-data; boundary=XX"},
            b'--XX\r\nContent-Disposition: form-data; name="file"; filename="a.html"\r\n\r\n<DL>',
            "malformed",
        ),  # cut off before the closing boundary
        (
            {"Content-Type": "multipart/form-data; boundary=XX"},
            b'--XX\r\nContent-Disposition: form-data; name="other"\r\n\r\nx\r\n--XX--\r\n',
            "`file` part is missing",
        ),
    ],
)
async def test_malformed_uploads_are_400(
    http: httpx.AsyncClient, user: User, headers: dict[str, str], body: bytes, message: str
) -> None:
    response = await http.post("/v1/imports", headers=user.headers | headers, content=body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid-request"
    assert message in response.json()["message"]


async def test_too_many_parts_and_a_bad_format_value_are_400(http: httpx.AsyncClient, user: User) -> None:
    parts = (
        b"".join(b'--XX\r\nContent-Disposition: form-data; name="p%d"\r\n\r\nx\r\n' % i for i in range(10))
        + b"--XX--\r\n"
    )
    response = await http.post(
        "/v1/imports", headers=user.headers | {"Content-Type": "multipart/form-data; boundary=XX"}, content=parts
    )
    assert response.status_code == 400 and "form parts" in response.json()["message"]
    response = await upload(http, user, NETSCAPE, fmt="excel")
    assert response.status_code == 400 and "format must be one of" in response.json()["message"]


async def test_an_upload_over_fifty_mib_is_413_and_stores_nothing(http: httpx.AsyncClient, user: User) -> None:
    big = b"a" * (50 * 1024 * 1024 + 1)
    response = await upload(http, user, big)  # Content-Length says it: refused before reading
    assert response.status_code == 413
    assert response.json()["code"] == "payload-too-large"

    async def chunked() -> Any:  # no Content-Length: cut off while streaming
        yield b'--XX\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n'
        for _ in range(51):
            yield b"a" * (1024 * 1024)

    response = await http.post(
        "/v1/imports", headers=user.headers | {"Content-Type": "multipart/form-data; boundary=XX"}, content=chunked()
    )
    assert response.status_code == 413
    assert response.json()["code"] == "payload-too-large"


async def test_the_one_mib_limit_stays_on_other_routes(http: httpx.AsyncClient, user: User) -> None:
    body = {"url": "https://example.com/x", "notes": "n" * (2 * 1024 * 1024)}
    response = await http.put("/v1/bookmarks/big-1", json=body, headers=user.headers)
    assert response.status_code == 413


async def test_an_invalid_item_creates_no_folder(http: httpx.AsyncClient, user: User) -> None:
    content = b"""<!DOCTYPE NETSCAPE-Bookmark-file-1>
<DL><p>
    <DT><H3>Only bookmarklets</H3>
    <DL><p><DT><A HREF="javascript:void(0)">Bookmarklet</A></DL><p>
    <DT><A HREF="https://example.net/kept">Kept</A>
</DL><p>
"""
    record = await run_import(http, user, content)
    assert (record["created"], record["invalid"]) == (1, 1)
    library = await sync_library(http, user)
    assert library.collections == {} and len(library.bookmarks) == 1
