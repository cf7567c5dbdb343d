"""Fetching a link preview: the page's head, then its picture and icon, each bounded in bytes and time.

No browser and no AI provider: one SSRF-safe GET of at most the head of the page (and at most
``head_bytes``), then one GET per image, which is decoded within a pixel bound and re-encoded
(:mod:`enrichment.previews.images`). Any failure gives fewer facts, never an error: a page that cannot
be fetched is a preview with nothing in it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from opentelemetry import trace

from enrichment.fetch import FetchError, SafeFetcher
from enrichment.metadata import PageMetadata, parse_html, read_metadata
from enrichment.pipeline.text import detect_language
from enrichment.previews.images import ICON_SIDE, PICTURE_SIDE, EncodedImage, reencode
from enrichment.previews.model import PreviewFacts, PreviewLimits

__all__ = ["FetchedPreview", "Previewer"]

log = logging.getLogger("enrichment.previews")
_tracer = trace.get_tracer("enrichment.previews")

_ICON_MAX_BYTES: Final = 256 * 1024


@dataclass(frozen=True, slots=True)
class FetchedPreview:
    facts: PreviewFacts
    images: tuple[EncodedImage, ...]
    """The re-encoded picture and icon the facts point at, to be stored with them."""
    fetched: bool
    """False when the page itself could not be fetched (the facts are then all null)."""


class Previewer:
    """Fetches previews; concurrent requests for one URL in this process share one fetch."""

    def __init__(self, *, fetcher: SafeFetcher, limits: PreviewLimits) -> None:
        self._fetcher = fetcher
        self._limits = limits
        self._in_flight: dict[str, asyncio.Task[FetchedPreview]] = {}

    async def aclose(self) -> None:
        await self._fetcher.aclose()

    async def fetch(self, url: str) -> FetchedPreview:
        task = self._in_flight.get(url)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._fetch(url))
            self._in_flight[url] = task
            task.add_done_callback(lambda _: self._in_flight.pop(url, None))
        # One caller giving up (a closed connection) must not cancel the fetch the others wait on.
        return await asyncio.shield(task)

    async def _fetch(self, url: str) -> FetchedPreview:
        with _tracer.start_as_current_span("fetch preview") as span:
            try:
                page = await self._fetcher.fetch_head(
                    url, max_bytes=self._limits.head_bytes, timeout_seconds=self._limits.timeout_seconds
                )
            except FetchError as exc:
                span.set_attribute("enrichment.preview_error", exc.code)
                log.info("preview page not fetched", extra={"host": _host(url), "error_code": exc.code})
                return FetchedPreview(PreviewFacts(), (), fetched=False)
            metadata = await asyncio.to_thread(_read, page.text, page.final_url)
            picture, icon = await asyncio.gather(
                self._image(metadata.image_url, max_bytes=self._limits.image_bytes, side=PICTURE_SIDE),
                self._image(
                    metadata.icon_url, max_bytes=min(_ICON_MAX_BYTES, self._limits.image_bytes), side=ICON_SIDE
                ),
            )
        facts = PreviewFacts(
            title=metadata.title,
            description=metadata.description,
            site_name=metadata.site_name,
            language=await asyncio.to_thread(_language, metadata),
            canonical_url=metadata.canonical_url,
            image_id=picture.id if picture else None,
            favicon_id=icon.id if icon else None,
        )
        return FetchedPreview(facts, tuple(image for image in (picture, icon) if image is not None), fetched=True)

    async def _image(self, url: str | None, *, max_bytes: int, side: int) -> EncodedImage | None:
        if url is None:
            return None
        try:
            async with asyncio.timeout(self._limits.timeout_seconds):
                fetched = await self._fetcher.fetch_image(url, max_bytes=max_bytes)
        except FetchError as exc:
            log.info("preview image not fetched", extra={"host": _host(url), "error_code": exc.code})
            return None
        except TimeoutError:
            log.info("preview image not fetched", extra={"host": _host(url), "error_code": "fetch-timeout"})
            return None
        return await asyncio.to_thread(reencode, fetched.body, max_side=side, max_pixels=self._limits.image_pixels)


def _read(html: str, base_url: str) -> PageMetadata:
    root = parse_html(html)
    if root is None:
        return PageMetadata(None, None, None, None, None, None, None)
    return read_metadata(root, base_url)


def _language(metadata: PageMetadata) -> str | None:
    sample = " ".join(part for part in (metadata.title, metadata.description) if part)
    return detect_language(sample, declared=metadata.declared_language)


def _host(url: str) -> str:
    """The host only, for logs: a URL's path and query may carry anything."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""
