"""Enrichment pipeline: extract page metadata and text, analyse it (LLM or offline), render snapshots.

The names below load their module on first use: importing a light part (``pipeline.text``) must not
pull in trafilatura, the openai client and Playwright, which the API process never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from enrichment.pipeline.browser import BrowserRenderer, RenderError, UrlChecker, find_chromium
    from enrichment.pipeline.extract import extract_page, extract_text_plain
    from enrichment.pipeline.llm import LlmAnalyzer, build_analyzer
    from enrichment.pipeline.offline import OfflineAnalyzer
    from enrichment.pipeline.types import Analysis, PageContent, RenderedPage

_MODULE_OF = {
    "BrowserRenderer": "browser",
    "RenderError": "browser",
    "UrlChecker": "browser",
    "find_chromium": "browser",
    "extract_page": "extract",
    "extract_text_plain": "extract",
    "LlmAnalyzer": "llm",
    "build_analyzer": "llm",
    "OfflineAnalyzer": "offline",
    "Analysis": "types",
    "PageContent": "types",
    "RenderedPage": "types",
}

__all__ = [
    "Analysis",
    "BrowserRenderer",
    "LlmAnalyzer",
    "OfflineAnalyzer",
    "PageContent",
    "RenderError",
    "RenderedPage",
    "UrlChecker",
    "build_analyzer",
    "extract_page",
    "extract_text_plain",
    "find_chromium",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
