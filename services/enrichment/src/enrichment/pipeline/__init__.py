"""Enrichment pipeline: extract page metadata and text, analyse it (LLM or offline), render snapshots."""

from enrichment.pipeline.browser import BrowserRenderer, RenderError, UrlChecker, find_chromium
from enrichment.pipeline.extract import extract_page, extract_text_plain
from enrichment.pipeline.llm import LlmAnalyzer, build_analyzer
from enrichment.pipeline.offline import OfflineAnalyzer
from enrichment.pipeline.types import Analysis, PageContent, RenderedPage

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
