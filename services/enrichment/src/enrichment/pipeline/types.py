"""Value types shared by extraction, analysis and rendering."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Analysis", "PageContent", "RenderedPage"]


@dataclass(frozen=True, slots=True)
class PageContent:
    """What a fetched document says about itself, ready for analysis (docs/api-guide.md, section 6)."""

    title: str | None
    description: str | None
    thumbnail_url: str | None
    text: str
    """Main readable text; paragraphs separated by newlines."""
    language: str | None
    """ISO 639-1 code, e.g. ``de``."""
    site_name: str | None
    canonical_url: str | None


@dataclass(frozen=True, slots=True)
class Analysis:
    """Summary (2–4 sentences), one-sentence save_why and 1–8 lowercase tags, in the page's language."""

    summary: str
    save_why: str
    tags: list[str]
    source: Literal["llm", "offline"] = "offline"
    """Who wrote it: the LLM, or the offline analyser (no LLM configured, or its answer was unusable)."""


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """A page as a headless browser saw it after running its scripts."""

    html: str
    screenshot_png: bytes
    title: str | None
    final_url: str
