"""One enrichment attempt for one job: fetch the page, take its captures, analyse it.

Raises :class:`enrichment.fetch.FetchError` for failures the job records (its ``code`` becomes the
bookmark's ``lastErrorCode``); a failing browser never fails the attempt, it only costs the screenshot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol
from urllib.parse import urlsplit

from opentelemetry import trace

from common.canonical import same_site_canonical
from common.events import EnrichmentResult, page_text_excerpt
from common.urls import normalize_url
from enrichment.domain.model import normalize_tags, snapshot_status
from enrichment.fetch import FetchedImage, FetchedPage, FetchError, SafeFetcher
from enrichment.pipeline import Analysis, PageContent, RenderedPage, extract_page, extract_text_plain
from enrichment.pipeline.extract import TITLE_MAX_CHARS
from enrichment.pipeline.sanitize import bounded_html, renderable_html, sanitize_snapshot
from enrichment.previews.images import IMAGE_CONTENT_TYPE, PICTURE_SIDE, EncodedImage, reencode
from enrichment.service import ClaimedJob, Snapshot

log = logging.getLogger("enrichment.worker.attempt")
_tracer = trace.get_tracer("enrichment.pipeline")

_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
THUMBNAIL_MAX_BYTES: Final = 2 * 1024 * 1024
DEFAULT_MAX_IMAGE_PIXELS: Final = 16_777_216


class Analyzer(Protocol):
    async def analyze(self, content: PageContent, *, existing_tags: list[str]) -> Analysis: ...


class Renderer(Protocol):
    async def render(self, url: str) -> RenderedPage: ...

    async def render_html(self, html: str, *, url: str) -> RenderedPage: ...


@dataclass(frozen=True, slots=True)
class Enrichment:
    result: EnrichmentResult
    snapshots: list[Snapshot]
    images: tuple[EncodedImage, ...] = ()
    """Pictures the result's ``thumbnailUrl`` points at, stored with it."""


class Enricher:
    def __init__(
        self,
        *,
        fetcher: SafeFetcher,
        analyzer: Analyzer,
        renderer: Renderer | None,
        max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    ) -> None:
        self.fetcher = fetcher
        self.analyzer = analyzer
        self.renderer = renderer
        self.max_image_pixels = max_image_pixels

    async def enrich(self, job: ClaimedJob) -> Enrichment:
        if job.private_for is not None:
            return await self._enrich_captured(job)
        with _tracer.start_as_current_span("fetch page") as span:
            page = await self.fetcher.fetch(job.url)
            span.set_attribute("http.response.body.size", len(page.body))
            span.set_attribute("enrichment.content_type", page.content_type or "")
        is_html = page.content_type in _HTML_TYPES
        snapshots: list[Snapshot] = []
        rendered: RenderedPage | None = None
        if is_html:
            content = await _extract(extract_page, page.text, page.final_url)
            rendered = await self._render(page)
            if rendered is not None and len(content.text.strip()) < 200:
                # Script-built pages show their text only after rendering.
                rendered_content = await _extract(extract_page, rendered.html, rendered.final_url)
                if len(rendered_content.text) > len(content.text):
                    content = rendered_content
            snapshots = _captures(page, content, rendered)
        else:
            with _tracer.start_as_current_span("extract text"):
                content = await asyncio.to_thread(extract_text_plain, page.text)
        title = content.title or (rendered.title if rendered is not None else None)
        return await self._finish(job, content, snapshots, is_html=is_html, title=title)

    async def _enrich_captured(self, job: ClaimedJob) -> Enrichment:
        """The page a user's browser captured: never fetched, every step bounded (hostile markup)."""
        if job.captured is None:  # the job's HTML is gone (an account purge raced the claim)
            raise FetchError("unsupported-content", "the captured page is no longer stored")
        bounded = await asyncio.to_thread(bounded_html, job.captured.text())
        content = await _extract(extract_page, bounded, job.url)
        snapshot = await asyncio.to_thread(sanitize_snapshot, bounded)
        snapshots = [Snapshot("html", "text/html; charset=utf-8", snapshot.encode())]
        rendered = await self._render_captured(await asyncio.to_thread(renderable_html, bounded), job.url)
        if rendered is not None and rendered.screenshot_png:
            snapshots.append(Snapshot("screenshot", "image/png", rendered.screenshot_png))
        if content.text.strip():
            snapshots.append(Snapshot("readable_text", "text/plain; charset=utf-8", content.text.encode()))
        title = content.title or _clean_title(job.captured.title)
        return await self._finish(job, content, snapshots, is_html=True, title=title)

    async def _finish(
        self, job: ClaimedJob, content: PageContent, snapshots: list[Snapshot], *, is_html: bool, title: str | None
    ) -> Enrichment:
        thumbnail = await self._thumbnail(content.thumbnail_url)
        if thumbnail is not None:
            snapshots = [*snapshots, Snapshot("thumbnail", IMAGE_CONTENT_TYPE, thumbnail.data)]
        with _tracer.start_as_current_span("analyze") as span:
            analysis = await self.analyzer.analyze(content, existing_tags=job.existing_tags)
            span.set_attribute("enrichment.summary_source", analysis.source)
        kinds = {s.kind for s in snapshots}
        status = snapshot_status(
            is_html=is_html,
            html_stored="html" in kinds,
            text_stored="readable_text" in kinds,
            rendered_stored="screenshot" in kinds,
        )
        result = EnrichmentResult(
            normalizedUrl=job.normalized_url,
            domain=normalize_url(job.normalized_url).domain,
            title=title,
            description=content.description,
            # The picture as the platform re-encoded and serves it: clients never contact the site for it.
            thumbnailUrl=thumbnail.path if thumbnail is not None else None,
            summary=analysis.summary or None,
            saveWhy=analysis.save_why or None,
            tags=normalize_tags(analysis.tags),
            snapshotStatus=status,
            language=content.language,
            summarySource=analysis.source,
            text=page_text_excerpt(content.text),
            canonicalUrl=same_site_canonical(job.normalized_url, content.canonical_url),
        )
        return Enrichment(result=result, snapshots=snapshots, images=(thumbnail,) if thumbnail is not None else ())

    async def _thumbnail(self, url: str | None) -> EncodedImage | None:
        fetched = await self._fetch_thumbnail(url)
        if fetched is None:
            return None
        return await asyncio.to_thread(reencode, fetched.body, max_side=PICTURE_SIDE, max_pixels=self.max_image_pixels)

    async def _fetch_thumbnail(self, url: str | None) -> FetchedImage | None:
        """The page's image through the SSRF-safe fetcher; None (and the attempt goes on) when it fails."""
        if not url:
            return None
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
        except ValueError:
            parts, host = None, ""
        if parts is None or parts.scheme not in ("http", "https"):
            log.info("thumbnail dropped: not an http(s) address", extra={"host": host})
            return None
        with _tracer.start_as_current_span("fetch thumbnail") as span:
            span.set_attribute("server.address", host)
            try:
                image = await self.fetcher.fetch_image(url, max_bytes=THUMBNAIL_MAX_BYTES)
            except FetchError as exc:
                span.set_attribute("enrichment.thumbnail_error", exc.code)
                # The host only: the query of a hostile page's image URL may carry anything.
                log.info("thumbnail dropped", extra={"host": host, "error_code": exc.code})
                return None
            span.set_attribute("http.response.body.size", len(image.body))
            return image

    async def _render_captured(self, html: str, url: str) -> RenderedPage | None:
        if self.renderer is None:
            return None
        try:
            with _tracer.start_as_current_span("render page"):
                return await self.renderer.render_html(html, url=url)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("browser snapshot of a captured page failed", extra={"error": str(exc)[:500]})
            return None

    async def _render(self, page: FetchedPage) -> RenderedPage | None:
        if self.renderer is None:
            return None
        try:
            with _tracer.start_as_current_span("render page"):
                return await self.renderer.render(page.final_url)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("browser snapshot failed; keeping the fetched capture", extra={"error": str(exc)[:500]})
            return None


async def _extract(extract: Callable[..., PageContent], html: str, base_url: str) -> PageContent:
    # CPU-bound (lxml, trafilatura): off the loop so heartbeats keep beating.
    with _tracer.start_as_current_span("extract page"):
        return await asyncio.to_thread(extract, html, base_url=base_url)


def _clean_title(title: str | None) -> str | None:
    if not title:
        return None
    return " ".join(title.split())[:TITLE_MAX_CHARS] or None


def _captures(page: FetchedPage, content: PageContent, rendered: RenderedPage | None) -> list[Snapshot]:
    # Stored as UTF-8 whatever the page declared, so the served Content-Type charset is always right.
    snapshots: list[Snapshot] = []
    if rendered is not None and rendered.screenshot_png:
        snapshots.append(Snapshot("html", "text/html; charset=utf-8", rendered.html.encode()))
        snapshots.append(Snapshot("screenshot", "image/png", rendered.screenshot_png))
    elif page.text.strip():
        snapshots.append(Snapshot("html", "text/html; charset=utf-8", page.text.encode()))
    if content.text.strip():
        snapshots.append(Snapshot("readable_text", "text/plain; charset=utf-8", content.text.encode()))
    return snapshots
