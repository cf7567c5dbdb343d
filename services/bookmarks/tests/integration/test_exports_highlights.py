"""GET /v1/exports with highlights (docs/api-guide.md, section 13): ``markdown``, ``annotations`` and the
highlights of the ``json`` export, streamed from one snapshot whatever their number."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from markdown_it import MarkdownIt
from sqlalchemy import insert, update

from bookmarks.store.tables import bookmarks as bookmarks_table
from bookmarks.store.tables import highlights as highlights_table

from .test_exports import asgi_get, bulk_load


async def put_bm(http: httpx.AsyncClient, user: Any, bid: str, **fields: Any) -> None:
    body = {"url": f"https://pools.example/{bid}"} | fields
    response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text


async def put_hl(http: httpx.AsyncClient, user: Any, hid: str, bid: str, quote: str, **fields: Any) -> None:
    body = {"bookmarkId": bid, "quote": quote} | fields
    response = await http.put(f"/v1/highlights/{hid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text


async def export(http: httpx.AsyncClient, user: Any, fmt: str) -> httpx.Response:
    response = await http.get("/v1/exports", params={"format": fmt}, headers=user.headers)
    assert response.status_code == 200, response.text
    return response


async def make_library(http: httpx.AsyncClient, user: Any) -> None:
    await put_bm(http, user, "b1", title="Tide <pools> [x](javascript:alert(1))", notes="Go at *low* tide")
    await put_hl(http, user, "h1", "b1", "Anemones close", prefix="puddle. ", suffix=" when the water", note="Why?",
                 start=37, end=51)  # fmt: skip
    await put_hl(http, user, "h2", "b1", "Crabs hide under rocks")
    await put_hl(http, user, "gone", "b1", "deleted passage")
    assert (await http.delete("/v1/highlights/gone", headers=user.headers)).status_code == 204
    await put_bm(http, user, "plain")  # nothing to say about it
    await put_bm(http, user, "noted", notes="Just a note")
    await put_bm(http, user, "deleted")
    await put_hl(http, user, "h3", "deleted", "with its bookmark")
    assert (await http.delete("/v1/bookmarks/deleted", headers=user.headers)).status_code == 204


async def test_markdown_export(http: httpx.AsyncClient, user: Any) -> None:
    await make_library(http, user)
    response = await export(http, user, "markdown")
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    assert response.headers["content-disposition"].endswith('.md"')
    text = response.text
    assert text.startswith("# Highlights\n")
    assert (
        "## [Tide \\<pools\\> \\[x\\](javascript:alert(1))](<https://pools.example/b1>)\n\nGo at \\*low\\* tide" in text
    )
    assert "> Anemones close\n\nWhy?\n\n" in text
    assert "(<https://pools.example/b1#:~:text=puddle.-,Anemones%20close,-when%20the%20water>)" in text
    assert "> Crabs hide under rocks\n\n[Open the passage](<https://pools.example/b1#:~:text=Crabs%20hide" in text
    assert "## [https://pools.example/noted](<https://pools.example/noted>)\n\nJust a note\n\n" in text
    assert "plain" not in text and "deleted" not in text and "with its bookmark" not in text
    html = MarkdownIt("commonmark").render(text)
    assert 'href="javascript' not in html and "<pools>" not in html


async def test_annotations_export(http: httpx.AsyncClient, user: Any) -> None:
    await make_library(http, user)
    response = await export(http, user, "annotations")
    assert response.headers["content-type"] == "application/ld+json"
    assert response.headers["content-disposition"].endswith('.jsonld"')
    document = response.json()
    assert document["@context"] == "http://www.w3.org/ns/anno.jsonld"
    assert document["type"] == "AnnotationCollection"
    items = document["first"]["items"]
    assert [i["target"]["selector"] for i in items] == [
        [{"type": "TextQuoteSelector", "exact": "Anemones close", "prefix": "puddle. ", "suffix": " when the water"},
         {"type": "TextPositionSelector", "start": 37, "end": 51}],
        {"type": "TextQuoteSelector", "exact": "Crabs hide under rocks"},
    ]  # fmt: skip
    assert {i["target"]["source"] for i in items} == {"https://pools.example/b1"}
    assert items[0]["body"]["value"] == "Why?" and "body" not in items[1]


async def test_json_export_carries_live_highlights(http: httpx.AsyncClient, user: Any, sync_lib: Any) -> None:
    await make_library(http, user)
    data = (await export(http, user, "json")).json()
    by_id = {b["clientBookmarkId"]: b for b in data["bookmarks"]}
    library = await sync_lib(user)
    assert by_id["b1"]["highlights"] == [library.highlights["h1"], library.highlights["h2"]]
    assert by_id["plain"]["highlights"] == [] and "deleted" not in by_id


async def test_fifty_thousand_highlights_stream(bookmarks_app: Any, user: Any) -> None:
    await bulk_load(bookmarks_app, user.id, 60)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    async with bookmarks_app.state.sessions() as session, session.begin():
        for b in range(50):
            rows = [
                {"owner_uid": user.id, "highlight_id": f"h-{b}-{i}", "client_bookmark_id": f"bulk-{b:06d}",
                 "quote": f"passage {i} of page {b}", "prefix": "", "suffix": "", "color": "yellow",
                 "note": "noted" if i % 2 else "", "created_at": base + timedelta(seconds=i),
                 "updated_at": base + timedelta(seconds=b * 1000 + i)}
                for i in range(1000)
            ]  # fmt: skip
            await session.execute(insert(highlights_table), rows)
        has_some = bookmarks_table.c.client_bookmark_id < "bulk-000050"
        await session.execute(
            update(bookmarks_table)
            .where(bookmarks_table.c.owner_uid == user.id, has_some)
            .values(search_highlight_texts=["passage"])
        )
    for fmt in ("annotations", "markdown", "json"):
        status, chunks = await asgi_get(bookmarks_app, f"/v1/exports?format={fmt}", user.headers)
        assert status == 200
        # Pieces of about 1,000 highlights, each sent as it is written: never the whole file at once.
        assert len(chunks) >= 50, (fmt, len(chunks))
        body = b"".join(chunks)
        assert max(len(c) for c in chunks) < len(body) / 20
        if fmt == "annotations":
            items = json.loads(body)["first"]["items"]
            assert len(items) == 50_000 and len({i["id"] for i in items}) == 50_000
        elif fmt == "markdown":
            assert body.count(b"\n> passage ") == 50_000 and body.count(b"\n## ") == 50
        else:
            bookmarks = json.loads(body)["bookmarks"]
            assert len(bookmarks) == 60 and sum(len(b["highlights"]) for b in bookmarks) == 50_000
