"""Imports create highlights (docs/api-guide.md, section 13): the JSON export round trip, Raindrop's
``highlights`` column and Omnivore's export; once each (stable ids), within the limits (an item past one
is invalid), anchored when the page text is known, and searchable."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert

from bookmarks.store.tables import highlights as highlights_table
from common.events import EnrichmentCompleted, EnrichmentResult
from devstack.testing import eventually

from .test_imports import report, run_import

UNIT_FIXTURES = Path(__file__).parents[1] / "unit" / "imports"
PAGE = "Tide pools hold a world in a puddle. Anemones close when the water leaves them. Crabs hide under rocks."


async def put_bm(http: httpx.AsyncClient, user: Any, bid: str, url: str, **fields: Any) -> None:
    response = await http.put(f"/v1/bookmarks/{bid}", json={"url": url} | fields, headers=user.headers)
    assert response.status_code == 200, response.text


async def put_hl(http: httpx.AsyncClient, user: Any, hid: str, bid: str, quote: str, **fields: Any) -> None:
    body = {"bookmarkId": bid, "quote": quote} | fields
    response = await http.put(f"/v1/highlights/{hid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text


def omnivore_bytes() -> bytes:
    """An Omnivore export ZIP: a metadata file, a content file and the highlights/<slug>.md files."""
    articles = [
        {"id": f"5d1e000{n}-0000-4000-8000-000000000000", "slug": f"pools-{n}", "title": f"Pools {n}",
         "url": f"https://pools.example/{n}", "state": "Active", "labels": ["ocean"],
         "savedAt": "2024-06-01T10:00:00.000Z"}
        for n in range(2)
    ]  # fmt: skip
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata_0_to_1.json", json.dumps(articles))
        archive.writestr("content/pools-0.html", f"<html><body><p>{PAGE}</p></body></html>")
        archive.writestr("highlights/pools-0.md",
                         "> Anemones close when the water leaves them. \n\nSee the photo.\n\n> Crabs hide under rocks. \n")  # fmt: skip
    return buffer.getvalue()


def by_url(library: Any) -> dict[str, list[dict[str, Any]]]:
    urls = {b["clientBookmarkId"]: b["url"] for b in library.bookmarks.values()}
    found: dict[str, list[dict[str, Any]]] = {}
    for h in sorted(library.highlights.values(), key=lambda h: h["quote"]):
        found.setdefault(urls[h["bookmarkId"]], []).append(h)
    return found


def passage(h: dict[str, Any]) -> tuple[Any, ...]:
    return h["quote"], h["prefix"], h["suffix"], h["start"], h["end"], h["color"], h["note"]


async def search_ids(http: httpx.AsyncClient, user: Any, q: str) -> list[str]:
    response = await http.get("/v1/bookmarks/search", params={"q": q}, headers=user.headers)
    assert response.status_code == 200, response.text
    return [r["bookmark"]["clientBookmarkId"] for r in response.json()["data"]["results"]]


async def test_the_json_export_round_trips_its_highlights_once(
    http: httpx.AsyncClient, make_user: Any, sync_lib: Any
) -> None:
    alice, bob = make_user(), make_user()
    await put_bm(http, alice, "b1", "https://pools.example/a", title="Pools")
    await put_bm(http, alice, "b2", "https://pools.example/b")
    await put_hl(http, alice, "h1", "b1", "Anemones close", prefix="puddle. ", suffix=" when", start=37, end=51,
                 color="green", note="Why do they?")  # fmt: skip
    await put_hl(http, alice, "h2", "b1", "Crabs hide")
    await put_hl(http, alice, "h3", "b2", "starfish")
    exported = (await http.get("/v1/exports", params={"format": "json"}, headers=alice.headers)).content
    record = await run_import(http, bob, exported)
    assert record["status"] == "completed" and record["created"] == 2, record
    source, copy = by_url(await sync_lib(alice)), by_url(await sync_lib(bob))
    assert {url: [passage(h) for h in hs] for url, hs in copy.items()} == {
        url: [passage(h) for h in hs] for url, hs in source.items()
    }
    assert await search_ids(http, bob, "starfish") != []
    # The same file again: nothing new (the same ids), every item unchanged.
    again = await run_import(http, bob, exported)
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 2), again
    assert len((await sync_lib(bob)).highlights) == 3
    # Into the account it came from: the passages are already there, nothing is doubled.
    back = await run_import(http, alice, exported)
    assert back["unchanged"] == 2 and len((await sync_lib(alice)).highlights) == 3


async def test_a_raindrop_csv_creates_its_highlights(http: httpx.AsyncClient, user: Any, sync_lib: Any) -> None:
    # One bookmark exists: its highlights are added to it (updated).
    await put_bm(http, user, "mine", "https://pools.example/how-tide-pools-work", notes="Read again before the trip")
    record = await run_import(http, user, (UNIT_FIXTURES / "fixtures" / "raindrop_highlights.csv").read_bytes())
    assert record["status"] == "completed" and record["format"] == "raindrop-csv", record
    assert (record["created"], record["updated"], record["invalid"]) == (2, 1, 0), record
    rows = await report(http, user, record["id"])
    assert rows[0]["outcome"] == "updated" and rows[0]["clientBookmarkId"] == "mine"
    found = by_url(await sync_lib(user))
    assert [(h["quote"], h["note"]) for h in found["https://pools.example/how-tide-pools-work"]] == [
        ("Anemones close when the water leaves them.", "Check this at low tide"),
        ("Crabs hide under rocks until the tide returns\nand the pool fills again.", ""),
        ("Put every stone back where you found it.", "The ranger's rule\n(twice underlined)"),
    ]
    assert [h["quote"] for h in found["https://pools.example/old"]] == ["First passage", "Second passage"]
    assert await search_ids(http, user, "ranger") == ["mine"]
    assert "https://pools.example/plain" not in found


async def test_an_omnivore_export_creates_its_highlights_anchored_when_the_text_arrives(
    http: httpx.AsyncClient, user: Any, sync_lib: Any, publish: Any, bookmarks_app: Any
) -> None:
    record = await run_import(http, user, omnivore_bytes(), "omnivore")
    assert record["status"] == "completed" and record["created"] == 2, record
    library = await sync_lib(user)
    first = next(b for b in library.bookmarks.values() if b["url"] == "https://pools.example/0")
    found = by_url(library)["https://pools.example/0"]
    assert [(h["quote"], h["note"], h["anchor"]) for h in found] == [
        ("Anemones close when the water leaves them.", "See the photo.", None),
        ("Crabs hide under rocks.", "", None),
    ]
    url = "https://pools.example/0"
    result = EnrichmentResult(normalizedUrl=url, domain="pools.example", title="Pools", text=PAGE)
    await publish(EnrichmentCompleted(userId=user.id, clientBookmarkId=first["clientBookmarkId"],
                                      normalizedUrl=url, result=result))  # fmt: skip

    async def anchored() -> list[Any] | None:
        hs = by_url(await sync_lib(user))[url]
        return hs if all(h["anchor"] for h in hs) else None

    hs = await eventually(anchored)
    assert [(h["anchor"], PAGE[h["start"] : h["end"]]) for h in hs] == [
        ("exact", "Anemones close when the water leaves them."),
        ("exact", "Crabs hide under rocks."),
    ]


async def test_an_item_past_a_highlight_limit_is_invalid_and_writes_nothing(
    http: httpx.AsyncClient, user: Any, sync_lib: Any, bookmarks_app: Any
) -> None:
    await put_bm(http, user, "full", "https://pools.example/how-tide-pools-work")
    now = datetime.now(UTC)
    rows = [{"owner_uid": user.id, "highlight_id": f"x{i}", "client_bookmark_id": "full", "quote": f"q{i}",
             "prefix": "", "suffix": "", "color": "yellow", "note": "", "created_at": now, "updated_at": now}
            for i in range(999)]  # fmt: skip
    async with bookmarks_app.state.sessions() as session, session.begin():
        await session.execute(insert(highlights_table), rows)
    record = await run_import(http, user, (UNIT_FIXTURES / "fixtures" / "raindrop_highlights.csv").read_bytes())
    assert (record["created"], record["invalid"]) == (2, 1), record
    [invalid] = [r for r in await report(http, user, record["id"]) if r["outcome"] == "invalid"]
    assert invalid["reason"] == "The bookmark would hold more than 1,000 highlights." and invalid["line"] == 2
    library = await sync_lib(user)
    assert not any(h["bookmarkId"] == "full" and not h["id"].startswith("x") for h in library.highlights.values())
