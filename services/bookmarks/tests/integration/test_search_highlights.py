"""Search over highlights (docs/api-guide.md, section 12): quotes and notes are searched like notes, a
bookmark found through a highlight shows it as its snippet, and ``has:highlights`` filters; the index
follows every write that changes a bookmark's highlights."""

from __future__ import annotations

from typing import Any

import httpx

from common.events import EnrichmentCompleted, EnrichmentResult
from devstack.testing import eventually


async def put_bm(http: httpx.AsyncClient, user: Any, bid: str, **fields: Any) -> None:
    body = {"url": f"https://pools.example/{bid}"} | fields
    response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text


async def put_hl(http: httpx.AsyncClient, user: Any, hid: str, bid: str, quote: str, **fields: Any) -> None:
    body = {"bookmarkId": bid, "quote": quote} | fields
    response = await http.put(f"/v1/highlights/{hid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text


async def search(http: httpx.AsyncClient, user: Any, q: str) -> list[dict[str, Any]]:
    response = await http.get("/v1/bookmarks/search", params={"q": q}, headers=user.headers)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["data"]["results"]
    return results


async def found(http: httpx.AsyncClient, user: Any, q: str) -> list[str]:
    return [r["bookmark"]["clientBookmarkId"] for r in await search(http, user, q)]


async def test_quotes_and_notes_are_searched_with_the_highlight_as_snippet(http: httpx.AsyncClient, user: Any) -> None:
    await put_bm(http, user, "b1", title="Rock pools")
    await put_bm(http, user, "b2", title="Something else", notes="anemones everywhere")
    await put_hl(http, user, "h1", "b1", "Anemones close when the water leaves them.", note="Ask the ranger")
    results = await search(http, user, "anemones")
    # Both match; the bookmark's own notes weigh like a highlight, so the newest comes first.
    assert [r["bookmark"]["clientBookmarkId"] for r in results] == ["b2", "b1"]
    assert results[1]["snippet"] == "<mark>Anemones</mark> close when the water leaves them."
    assert await found(http, user, "ranger") == ["b1"]
    assert await found(http, user, '"close when the water"') == ["b1"]
    # Every word must match, in the bookmark's fields or its highlights.
    assert await found(http, user, "rock ranger") == ["b1"]
    assert await found(http, user, "rock -ranger") == []
    # A phrase never spans two highlights, nor a quote and its note.
    assert await found(http, user, '"leaves them ask"') == []


async def test_has_highlights_and_unknown_has_values(http: httpx.AsyncClient, user: Any) -> None:
    await put_bm(http, user, "with")
    await put_bm(http, user, "without")
    await put_hl(http, user, "h1", "with", "a passage")
    assert await found(http, user, "has:highlights") == ["with"]
    assert await found(http, user, "-has:highlights") == ["without"]
    assert await found(http, user, "HAS:Highlights passage") == ["with"]
    for q in ("has:notes", "has:", "-has:links"):
        response = await http.get("/v1/bookmarks/search", params={"q": q}, headers=user.headers)
        assert response.status_code == 400, q
        assert response.json()["code"] == "invalid-request"


async def test_snippets_escape_highlight_text(http: httpx.AsyncClient, user: Any) -> None:
    await put_bm(http, user, "b1")
    await put_hl(http, user, "h1", "b1", 'x <img src=x onerror="alert(1)"> tidepool & <b>rocks</b>')
    [result] = await search(http, user, "tidepool")
    assert (
        result["snippet"]
        == "x &lt;img src=x onerror=&quot;alert(1)&quot;&gt; <mark>tidepool</mark> &amp; &lt;b&gt;rocks&lt;/b&gt;"
    )


async def test_the_index_follows_every_change_of_a_bookmarks_highlights(http: httpx.AsyncClient, user: Any) -> None:
    await put_bm(http, user, "b1", title="Pools")
    await put_hl(http, user, "h1", "b1", "starfish", note="orange")
    # A PUT of the bookmark keeps its highlights searchable.
    await put_bm(http, user, "b1", title="Tide pools")
    assert await found(http, user, "starfish tide") == ["b1"]
    # A changed note: the old text is not found, the new one is.
    await put_hl(http, user, "h1", "b1", "starfish", note="purple")
    assert await found(http, user, "orange") == [] and await found(http, user, "purple") == ["b1"]
    # Deleted with its bookmark, back with it.
    assert (await http.delete("/v1/bookmarks/b1", headers=user.headers)).status_code == 204
    assert await found(http, user, "starfish") == []
    assert (await http.post("/v1/trash/b1/restore", headers=user.headers)).status_code == 200
    assert await found(http, user, "starfish") == ["b1"]
    assert await found(http, user, "has:highlights") == ["b1"]
    # A bulk change keeps them; a bulk delete and its undo take them and bring them back.
    done = await http.post("/v1/bookmarks/bulk", json={"ids": ["b1"], "action": "favorite"}, headers=user.headers)
    assert done.status_code == 200, done.text
    assert await found(http, user, "starfish") == ["b1"]
    done = await http.post("/v1/bookmarks/bulk", json={"ids": ["b1"], "action": "delete"}, headers=user.headers)
    assert await found(http, user, "starfish") == []
    token = done.json()["data"]["undoToken"]
    assert (
        await http.post("/v1/bookmarks/bulk/undo", json={"undoToken": token}, headers=user.headers)
    ).status_code == 200
    assert await found(http, user, "starfish") == ["b1"]
    # Deleted on its own: gone from search and from has:.
    assert (await http.delete("/v1/highlights/h1", headers=user.headers)).status_code == 204
    assert await found(http, user, "starfish") == [] and await found(http, user, "has:highlights") == []


async def test_a_duplicates_merge_moves_the_search_with_the_highlights(http: httpx.AsyncClient, user: Any) -> None:
    await put_bm(http, user, "keep", url="https://pools.example/a")
    await put_bm(http, user, "dup", url="https://pools.example/a?utm_source=x")
    await put_hl(http, user, "h1", "dup", "barnacles")
    response = await http.post("/v1/duplicates/merge", json={"keep": "keep", "merge": ["dup"]}, headers=user.headers)
    assert response.status_code == 200, response.text
    assert await found(http, user, "barnacles") == ["keep"]


async def test_a_page_in_another_language_stems_the_highlights(
    http: httpx.AsyncClient, user: Any, publish: Any, bookmarks_app: Any
) -> None:
    url = "https://pools.example/fr"
    await put_bm(http, user, "fr", url=url)
    await put_hl(http, user, "h1", "fr", "Les marées basses", note="à revoir")
    assert await found(http, user, "maree") == []  # no stem before the page's language is known
    result = EnrichmentResult(normalizedUrl=url, domain="pools.example", title="Marées",
                              text="Les marées basses découvrent les rochers.", language="fr")  # fmt: skip
    await publish(EnrichmentCompleted(userId=user.id, clientBookmarkId="fr", normalizedUrl=url, result=result))

    async def stemmed() -> list[str] | None:
        ids = await found(http, user, "revoir maree")
        return ids or None

    assert await eventually(stemmed) == ["fr"]
    [hit] = await search(http, user, "revoir")
    assert hit["snippet"] == "à <mark>revoir</mark>"


async def test_an_enrichment_without_text_keeps_the_highlights_searchable(
    http: httpx.AsyncClient, user: Any, publish: Any, bookmarks_app: Any
) -> None:
    url = "https://pools.example/notext"
    await put_bm(http, user, "nt", url=url)
    await put_hl(http, user, "h1", "nt", "limpets cling")
    result = EnrichmentResult(normalizedUrl=url, domain="pools.example", title="Limpets and other shells")
    await publish(EnrichmentCompleted(userId=user.id, clientBookmarkId="nt", normalizedUrl=url, result=result))

    async def enriched() -> list[str] | None:
        ids = await found(http, user, "shells")
        return ids or None

    assert await eventually(enriched) == ["nt"]
    assert await found(http, user, "limpets cling") == ["nt"]
