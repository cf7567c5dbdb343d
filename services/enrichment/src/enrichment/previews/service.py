"""Link previews: the use cases behind ``GET /v1/previews`` and its images (docs/api-guide.md, section 6)."""

from __future__ import annotations

import time
import uuid

from common.db import SessionFactory, transaction
from common.errors import InvalidUrl, NotFound, RateLimited
from common.urls import InvalidUrlError, normalize_url
from enrichment.domain.model import Clock
from enrichment.metrics import PREVIEW_DURATION, PREVIEW_REQUESTS
from enrichment.previews import store
from enrichment.previews.fetch import Previewer
from enrichment.previews.images import is_image_id
from enrichment.previews.model import Preview, PreviewPolicy

__all__ = ["get_preview", "read_image"]


async def get_preview(
    *,
    sessions: SessionFactory,
    previewer: Previewer,
    policy: PreviewPolicy,
    clock: Clock,
    user_id: uuid.UUID,
    url: str,
) -> Preview:
    """The preview of ``url``: from the shared cache, else fetched now and cached for everyone."""
    try:
        normalized = normalize_url(url).url
    except InvalidUrlError as exc:
        raise InvalidUrl(str(exc)) from None
    now = clock.now()
    window = now.replace(second=0, microsecond=0)
    async with transaction(sessions) as session:
        used = await store.count_request(session, user_id, window_start=window)
    if used > policy.per_minute:
        PREVIEW_REQUESTS.labels("rate-limited").inc()
        retry_after = 60 - now.second
        raise RateLimited(
            f"At most {policy.per_minute} previews per minute; try again in {retry_after} s.",
            retry_after_seconds=retry_after,
        )
    async with sessions() as session:
        facts = await store.cached(session, normalized, now=now)
    if facts is not None:
        PREVIEW_REQUESTS.labels("hit").inc()
        return Preview(url=url, normalized_url=normalized, facts=facts)
    started = time.perf_counter()
    fetched = await previewer.fetch(normalized)
    async with transaction(sessions) as session:
        for image in fetched.images:
            await store.save_image(session, image)
        ttl = policy.ttl if fetched.fetched else policy.failure_ttl
        await store.store(session, normalized, fetched.facts, now=clock.now(), ttl=ttl)
    outcome = "miss" if fetched.fetched else "failed"
    PREVIEW_REQUESTS.labels(outcome).inc()
    PREVIEW_DURATION.labels(outcome).observe(time.perf_counter() - started)
    return Preview(url=url, normalized_url=normalized, facts=fetched.facts)


async def read_image(*, sessions: SessionFactory, name: str) -> bytes:
    """The stored picture named ``<id>.webp``; NotFound for any other name."""
    image_id, dot, extension = name.partition(".")
    if not dot or extension != "webp" or not is_image_id(image_id):
        raise NotFound("There is no such image.")
    async with sessions() as session:
        data = await store.image_data(session, image_id)
    if data is None:
        raise NotFound("There is no such image.")
    return data
