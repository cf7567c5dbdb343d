"""A link preview as the API shows it: pure values, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from enrichment.previews.images import image_path

__all__ = ["Preview", "PreviewFacts", "PreviewLimits", "PreviewPolicy"]


@dataclass(frozen=True, slots=True)
class PreviewPolicy:
    """How often a user may ask and how long an answer is shared."""

    per_minute: int
    ttl: timedelta
    failure_ttl: timedelta


@dataclass(frozen=True, slots=True)
class PreviewLimits:
    """What one preview fetch may read."""

    head_bytes: int
    timeout_seconds: float
    image_bytes: int
    image_pixels: int


@dataclass(frozen=True, slots=True)
class PreviewFacts:
    """What one fetch learned about a normalized URL (stored in the shared cache; empty when it failed)."""

    title: str | None = None
    description: str | None = None
    site_name: str | None = None
    language: str | None = None
    canonical_url: str | None = None
    image_id: str | None = None
    favicon_id: str | None = None


@dataclass(frozen=True, slots=True)
class Preview:
    url: str
    normalized_url: str
    facts: PreviewFacts

    def wire(self) -> dict[str, Any]:
        """The ``data`` of ``GET /v1/previews`` (docs/api-guide.md, section 6)."""
        facts = self.facts
        return {
            "url": self.url,
            "normalizedUrl": self.normalized_url,
            "title": facts.title,
            "description": facts.description,
            "siteName": facts.site_name,
            "language": facts.language,
            "imageUrl": image_path(facts.image_id) if facts.image_id else None,
            "faviconUrl": image_path(facts.favicon_id) if facts.favicon_id else None,
            "canonicalUrl": facts.canonical_url,
        }
