"""Link previews (docs/api-guide.md, section 6): GET /v1/previews and its images, against a local site.

Every hostile page here must give a 200 with fewer facts, or a clear 4xx: never a 5xx, never a stored
image that is not a fresh raster re-encoding.
"""

from __future__ import annotations

import asyncio
import io
import ipaddress
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from enrichment_support import THUMBNAIL, Api, AuthUsers, Site
from PIL import Image

from enrichment.fetch import IPAddress, SafeFetcher, is_blocked_address
from enrichment.previews.fetch import Previewer
from enrichment.previews.model import PreviewLimits

FACTS = ("title", "description", "siteName", "language", "imageUrl", "faviconUrl", "canonicalUrl")
LIMITS = PreviewLimits(head_bytes=512 * 1024, timeout_seconds=5.0, image_bytes=5 * 1024 * 1024, image_pixels=16_777_216)


async def preview(api: Api, token_headers: dict[str, str], url: str) -> Any:
    return await api.http.get("/v1/previews", params={"url": url}, headers=token_headers)


def key() -> str:
    return uuid.uuid4().hex[:10]


async def test_a_preview_has_the_pages_facts_and_pictures_served_by_the_platform(
    api: Api, users: AuthUsers, site: Site
) -> None:
    user = await users.create(use_ai=False)  # previews need no AI consent
    k = key()
    response = await preview(api, user.headers, site.url(f"/preview/{k}"))
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["url"] == site.url(f"/preview/{k}")
    assert data["normalizedUrl"] == site.url(f"/preview/{k}")
    assert data["title"] == f"Brot backen {k}"
    assert data["description"] == "Wie Sauerteig ohne Hefe aufgeht."
    assert data["siteName"] == "Backstube"
    assert data["language"] == "de"
    assert data["canonicalUrl"] == site.url(f"/preview/{k}?canonical=1")
    assert data["imageUrl"] == THUMBNAIL.path  # the page's PNG, re-encoded: never the site's address
    assert data["faviconUrl"].startswith("/v1/previews/images/") and data["faviconUrl"].endswith(".webp")

    picture = await api.http.get(data["imageUrl"])  # no token: an <img> sends none
    assert picture.status_code == 200
    assert picture.headers["content-type"] == "image/webp"
    assert picture.headers["x-content-type-options"] == "nosniff"
    assert "immutable" in picture.headers["cache-control"]
    assert picture.content == THUMBNAIL.data
    assert Image.open(io.BytesIO(picture.content)).size == (48, 32)
    icon = await api.http.get(data["faviconUrl"])
    assert icon.status_code == 200 and Image.open(io.BytesIO(icon.content)).format == "WEBP"


async def test_only_the_head_is_read(api: Api, users: AuthUsers, site: Site) -> None:
    """The page's body is 3 MiB; the fetch stops at </head>, and a title past the budget is not seen."""
    user = await users.create(use_ai=False)
    k = key()
    assert (await preview(api, user.headers, site.url(f"/preview/{k}"))).json()["data"]["title"] == f"Brot backen {k}"
    late = (await preview(api, user.headers, site.url(f"/hostile/late-title/{k}"))).json()["data"]
    assert late["title"] is None


async def test_the_cache_is_shared_across_users_and_costs_no_quota(api: Api, users: AuthUsers, site: Site) -> None:
    alice, bob = await users.create(), await users.create()
    k = key()
    url = site.url(f"/preview/{k}")
    first = (await preview(api, alice.headers, url)).json()["data"]
    second = (await preview(api, bob.headers, url + "?utm_source=feed")).json()["data"]
    assert site.hits[f"/preview/{k}"] == 1 and site.hits[f"/img/{k}.png"] == 1
    assert second["url"] == url + "?utm_source=feed"
    assert {name: second[name] for name in FACTS} == {name: first[name] for name in FACTS}
    for user in (alice, bob):
        quota = (await api.http.get("/v1/enrichment/quota", headers=user.headers)).json()["data"]
        assert quota["usedThisMonth"] == 0
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE normalized_url = :u", u=url) == 0


async def test_a_page_that_cannot_be_fetched_is_a_preview_with_nulls(api: Api, users: AuthUsers, site: Site) -> None:
    user = await users.create(use_ai=False)
    for path in (f"/status/404/{key()}", f"/status/503/{key()}", f"/hostile/not-html/{key()}"):
        response = await preview(api, user.headers, site.url(path))
        assert response.status_code == 200, (path, response.text)
        data = response.json()["data"]
        assert data["url"] == site.url(path) and data["normalizedUrl"] == site.url(path)
        assert all(data[name] is None for name in FACTS), (path, data)


@pytest.mark.parametrize("variant", ["svg", "huge-pixels", "html", "private-image"])
async def test_an_unsafe_or_unusable_picture_is_left_out(api: Api, users: AuthUsers, site: Site, variant: str) -> None:
    user = await users.create(use_ai=False)
    response = await preview(api, user.headers, site.url(f"/hostile/{variant}/{key()}"))
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["title"] == f"Hostile {variant}"
    assert data["imageUrl"] is None


async def test_a_polyglot_picture_is_served_as_fresh_pixels(api: Api, users: AuthUsers, site: Site) -> None:
    user = await users.create(use_ai=False)
    data = (await preview(api, user.headers, site.url(f"/hostile/polyglot/{key()}"))).json()["data"]
    served = await api.http.get(data["imageUrl"])
    assert served.status_code == 200
    assert b"<script" not in served.content and b"<html" not in served.content
    assert Image.open(io.BytesIO(served.content)).format == "WEBP"


async def test_a_decompression_bomb_and_a_lying_charset_give_a_preview(api: Api, users: AuthUsers, site: Site) -> None:
    user = await users.create(use_ai=False)
    bomb = await preview(api, user.headers, site.url(f"/hostile/bomb/{key()}"))
    assert bomb.status_code == 200
    assert bomb.json()["data"]["title"] == "bomb"  # read up to the budget, the rest never inflated
    lying = await preview(api, user.headers, site.url(f"/hostile/bad-encoding/{key()}"))
    assert lying.status_code == 200
    assert lying.json()["data"]["title"].startswith("Caf")


@pytest.mark.parametrize(
    "url", ["", "not a url", "ftp://example.com/file", "javascript:alert(1)", "http://", "https://" + "a" * 5000]
)
async def test_a_bad_url_is_400_invalid_url(api: Api, users: AuthUsers, url: str) -> None:
    user = await users.create(use_ai=False)
    response = await preview(api, user.headers, url)
    assert response.status_code == 400, response.text
    assert response.json()["code"] in ("invalid-url", "invalid-request")
    if len(url) < 4096:
        assert response.json()["code"] == "invalid-url"


async def test_previews_need_a_token_and_images_a_valid_name(api: Api, site: Site) -> None:
    assert (await api.http.get("/v1/previews", params={"url": site.url("/preview/x")})).status_code == 401
    for name in ("nope", "0" * 64 + ".png", "../" + "0" * 64 + ".webp", "0" * 64 + ".webp"):
        response = await api.http.get(f"/v1/previews/images/{name}")
        assert response.status_code == 404, name
        assert response.json()["code"] == "not-found"


async def test_sixty_previews_a_minute_then_429(api: Api, users: AuthUsers, site: Site) -> None:
    user = await users.create(use_ai=False)
    url = site.url(f"/preview/{key()}")
    minute = api.clock.now().replace(second=1, microsecond=0)
    api.clock.set(minute)
    try:
        answers = [(await preview(api, user.headers, url)).status_code for _ in range(61)]
        assert answers[:60] == [200] * 60
        refused = await preview(api, user.headers, url)
        assert refused.status_code == 429
        assert refused.json()["code"] == "rate-limited"
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        other = await users.create(use_ai=False)
        assert (await preview(api, other.headers, url)).status_code == 200  # per user
        api.clock.advance(minutes=1)
        assert (await preview(api, user.headers, url)).status_code == 200  # a new minute
    finally:
        api.clock.set(None)


async def test_concurrent_requests_for_one_page_share_one_fetch(api: Api, users: AuthUsers, site: Site) -> None:
    user = await users.create(use_ai=False)
    k = key()
    url = site.url(f"/preview/{k}")
    answers = await asyncio.gather(*(preview(api, user.headers, url) for _ in range(5)))
    assert {a.status_code for a in answers} == {200}
    assert site.hits[f"/preview/{k}"] == 1


async def test_a_failed_preview_is_cached_for_a_short_time(api: Api, users: AuthUsers, site: Site) -> None:
    user = await users.create(use_ai=False)
    path = f"/status/503/{key()}"
    await preview(api, user.headers, site.url(path))
    await preview(api, user.headers, site.url(path))
    assert site.hits[path] == 1
    row = await api.db.one(
        "SELECT expires_at - fetched_at AS ttl FROM previews WHERE normalized_url = :u", u=site.url(path)
    )
    assert row["ttl"].total_seconds() == 600


# --- SSRF: the production address policy, with the test site's loopback address allowed ---------------


def _blocked_except_loopback(address: IPAddress) -> bool:
    return not address.is_loopback and is_blocked_address(address)


@pytest.fixture
async def previewer() -> AsyncIterator[Previewer]:
    fetcher = SafeFetcher(timeout_seconds=5, user_agent="preview-tests", address_policy=_blocked_except_loopback)
    previewer = Previewer(fetcher=fetcher, limits=LIMITS)
    yield previewer
    await previewer.aclose()


async def test_a_redirect_to_a_private_address_is_not_followed(previewer: Previewer, site: Site) -> None:
    assert _blocked_except_loopback(ipaddress.ip_address("169.254.169.254"))
    fetched = await previewer.fetch(site.url(f"/hostile/private-redirect/{key()}"))
    assert fetched.fetched is False
    assert fetched.images == ()


async def test_a_picture_on_a_private_address_is_not_fetched(previewer: Previewer, site: Site) -> None:
    fetched = await previewer.fetch(site.url(f"/hostile/private-image/{key()}"))
    assert fetched.fetched is True
    assert fetched.facts.title == "Hostile private-image"
    assert fetched.facts.image_id is None


async def test_a_page_slower_than_the_deadline_gives_nulls_in_time(site: Site) -> None:
    fetcher = SafeFetcher(timeout_seconds=5, user_agent="preview-tests", allow_private_networks=True)
    slow = Previewer(fetcher=fetcher, limits=PreviewLimits(512 * 1024, 0.5, 1024 * 1024, 1_000_000))
    k = key()
    try:
        started = asyncio.get_running_loop().time()
        fetched = await slow.fetch(site.url(f"/held/{k}"))
        assert fetched.fetched is False
        assert asyncio.get_running_loop().time() - started < 3
    finally:
        site.release_event(k).set()
        await slow.aclose()
