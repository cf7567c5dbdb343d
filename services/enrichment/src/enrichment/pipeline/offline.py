"""The built-in analyser used when no LLM is configured (docs/api-guide.md, section 6).

Extractive and statistical, so it needs no network and no model download: the summary is 2–4 sentences
of the page itself chosen by keyphrase overlap and position, save_why is a templated sentence in the
page's language naming its main topics, and tags are YAKE keyphrases with the user's own tags preferred.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from enrichment.pipeline.keywords import (
    Keyphrase,
    TextIndex,
    choose_tags,
    extract_keyphrases,
    normalize_tag,
    prefer_frequent_cores,
    stopwords,
)
from enrichment.pipeline.text import (
    CJK_LANGUAGES,
    collapse_whitespace,
    detect_language,
    ends_sentence,
    has_cjk,
    split_sentences,
    truncate_at_word,
)
from enrichment.pipeline.types import Analysis, PageContent

__all__ = ["OfflineAnalyzer"]

MIN_SUMMARY_SENTENCES: Final = 2
MAX_SUMMARY_SENTENCES: Final = 4
SUMMARY_CHAR_BUDGET: Final = 700
"""Above this the summary drops its weakest sentences (never below two)."""
ANALYSIS_TEXT_CHARS: Final = 60_000

_TITLE_SEPARATOR: Final = re.compile(r"\s+(?:\||-|–|—|·|::|»|/)\s+")


@dataclass(frozen=True, slots=True)
class _Templates:
    why_topics: str
    why_title: str
    why_plain: str
    why_site: str
    joiner: str
    summary_titled: str
    summary_site: str
    summary_untitled: str
    summary_no_text: str
    quotes: tuple[str, str]
    period: str = "."


# One sentence each; {site} is the already formatted why_site/summary_site fragment or "".
_TEMPLATES: Final[dict[str, _Templates]] = {
    "en": _Templates(
        why_topics="Saved for its take on {topics}{site}.",
        why_title="Saved as a reference for {title}{site}.",
        why_plain="Saved as a reference{site}.",
        why_site=" from {site}",
        joiner=" and ",
        summary_titled="{title} is a page{site}.",
        summary_site=" on {site}",
        summary_untitled="This is a saved web page{site}.",
        summary_no_text="No readable text could be extracted from it.",
        quotes=("“", "”"),
    ),
    "de": _Templates(
        why_topics="Gespeichert wegen der Ausführungen zu {topics}{site}.",
        why_title="Gespeichert als Referenz zu {title}{site}.",
        why_plain="Gespeichert als Referenz{site}.",
        why_site=" von {site}",
        joiner=" und ",
        summary_titled="{title} ist eine Seite{site}.",
        summary_site=" auf {site}",
        summary_untitled="Dies ist eine gespeicherte Webseite{site}.",
        summary_no_text="Es konnte kein lesbarer Text daraus gewonnen werden.",
        quotes=("„", "“"),
    ),
    "fr": _Templates(
        why_topics="Enregistré pour son éclairage sur {topics}{site}.",
        why_title="Enregistré comme référence sur {title}{site}.",
        why_plain="Enregistré comme référence{site}.",
        why_site=" ({site})",
        joiner=" et ",
        summary_titled="{title} est une page{site}.",
        summary_site=" publiée sur {site}",
        summary_untitled="Il s’agit d’une page web enregistrée{site}.",
        summary_no_text="Aucun texte lisible n’a pu en être extrait.",
        quotes=("« ", " »"),
    ),
    "es": _Templates(
        why_topics="Guardado por su enfoque sobre {topics}{site}.",
        why_title="Guardado como referencia sobre {title}{site}.",
        why_plain="Guardado como referencia{site}.",
        why_site=" ({site})",
        joiner=" y ",
        summary_titled="{title} es una página{site}.",
        summary_site=" publicada en {site}",
        summary_untitled="Es una página web guardada{site}.",
        summary_no_text="No se pudo extraer texto legible de ella.",
        quotes=("«", "»"),
    ),
    "it": _Templates(
        why_topics="Salvato per il suo punto di vista su {topics}{site}.",
        why_title="Salvato come riferimento su {title}{site}.",
        why_plain="Salvato come riferimento{site}.",
        why_site=" ({site})",
        joiner=" e ",
        summary_titled="{title} è una pagina{site}.",
        summary_site=" pubblicata su {site}",
        summary_untitled="È una pagina web salvata{site}.",
        summary_no_text="Non è stato possibile estrarne testo leggibile.",
        quotes=("«", "»"),
    ),
    "pt": _Templates(
        why_topics="Guardado pela sua abordagem sobre {topics}{site}.",
        why_title="Guardado como referência sobre {title}{site}.",
        why_plain="Guardado como referência{site}.",
        why_site=" ({site})",
        joiner=" e ",
        summary_titled="{title} é uma página{site}.",
        summary_site=" publicada em {site}",
        summary_untitled="É uma página web guardada{site}.",
        summary_no_text="Não foi possível extrair texto legível dela.",
        quotes=("“", "”"),
    ),
    "nl": _Templates(
        why_topics="Bewaard vanwege de kijk op {topics}{site}.",
        why_title="Bewaard als naslag over {title}{site}.",
        why_plain="Bewaard als naslag{site}.",
        why_site=" ({site})",
        joiner=" en ",
        summary_titled="{title} is een pagina{site}.",
        summary_site=" op {site}",
        summary_untitled="Dit is een bewaarde webpagina{site}.",
        summary_no_text="Er kon geen leesbare tekst uit worden gehaald.",
        quotes=("“", "”"),
    ),
    "ja": _Templates(
        why_topics="{site}{topics}についての内容が参考になるため保存しました。",
        why_title="{site}{title}を参考資料として保存しました。",
        why_plain="{site}ページを参考資料として保存しました。",
        why_site="{site}の",
        joiner="と",
        summary_titled="{title}は{site}ページです。",
        summary_site="{site}の",
        summary_untitled="{site}保存されたウェブページです。",
        summary_no_text="本文を抽出できませんでした。",
        quotes=("「", "」"),
        period="。",
    ),
    "zh": _Templates(
        why_topics="因其关于{topics}的内容而保存{site}。",
        why_title="作为关于{title}的参考资料而保存{site}。",
        why_plain="作为参考资料而保存{site}。",
        why_site="（{site}）",
        joiner="和",
        summary_titled="{title}是一个{site}页面。",
        summary_site="来自{site}的",
        summary_untitled="这是一个{site}已保存网页。",
        summary_no_text="未能从中提取可读文本。",
        quotes=("“", "”"),
        period="。",
    ),
}


class OfflineAnalyzer:
    """Summary, save_why and tags without any network access."""

    async def analyze(self, content: PageContent, *, existing_tags: list[str]) -> Analysis:
        # YAKE and sentence scoring are pure Python and take tens of milliseconds on long pages.
        return await asyncio.to_thread(self.analyze_sync, content, existing_tags=list(existing_tags))

    async def aclose(self) -> None:
        """Nothing to release; present so callers can close either analyser the same way."""

    def analyze_sync(self, content: PageContent, *, existing_tags: Sequence[str]) -> Analysis:
        text = content.text[:ANALYSIS_TEXT_CHARS]
        title = _title_core(content.title, content.site_name)
        description = content.description or ""
        language = content.language or detect_language(" ".join(filter(None, (text, title, description))))
        templates = _TEMPLATES.get(language or "en", _TEMPLATES["en"])

        keyphrase_source = "\n".join(part for part in (title, description, text) if part)
        keyphrases = prefer_frequent_cores(
            extract_keyphrases(keyphrase_source, language), TextIndex(keyphrase_source, language), language
        )
        tags = choose_tags(
            keyphrases,
            existing_tags=existing_tags,
            body=TextIndex(text, language),
            heading=TextIndex(f"{title}\n{description}", language),
            language=language,
            fallback=_fallback_tag_sources(title, content, language),
        )
        summary = _summary(text, title, description, keyphrases, language, templates, content.site_name)
        save_why = _save_why(tags, keyphrases, keyphrase_source, title, content.site_name, templates)
        return Analysis(summary=summary, save_why=save_why, tags=tags)


# --- summary -------------------------------------------------------------------------------------------


def _summary(
    text: str,
    title: str,
    description: str,
    keyphrases: Sequence[Keyphrase],
    language: str | None,
    templates: _Templates,
    site_name: str | None,
) -> str:
    sentences = split_sentences(text, language)
    candidates = _candidates(sentences, title, language, terminated_only=True)
    if len(candidates) < MIN_SUMMARY_SENTENCES:
        candidates = _candidates(sentences, title, language, terminated_only=False)
    if len(candidates) >= MIN_SUMMARY_SENTENCES:
        chosen = _best_sentences(candidates, title, keyphrases)
    else:
        chosen = _fallback_sentences(candidates, description, title, language, templates, site_name)
    return " ".join(_terminated(sentence, templates) for sentence in chosen)


def _candidates(sentences: Sequence[str], title: str, language: str | None, *, terminated_only: bool) -> list[str]:
    cjk = language in CJK_LANGUAGES
    seen: set[str] = set()
    kept: list[str] = []
    title_folded = title.casefold()
    for sentence in sentences:
        folded = sentence.casefold()
        if folded in seen or folded == title_folded:
            continue
        if terminated_only and not ends_sentence(sentence):
            continue  # headings, captions and menu items
        if cjk or has_cjk(sentence):
            if not 8 <= len(sentence) <= 250:
                continue
        else:
            words = len(sentence.split())
            if not 4 <= words <= 80 or len(sentence) > 500:
                continue
        if sum(char.isalpha() for char in sentence) < len(sentence) / 3:
            continue  # tables of numbers, code, link lists
        seen.add(folded)
        kept.append(sentence)
    return kept


def _best_sentences(candidates: Sequence[str], title: str, keyphrases: Sequence[Keyphrase]) -> list[str]:
    top_phrases = keyphrases[:12]
    title_words = _content_words(title)
    count = len(candidates)
    scored: list[tuple[float, int]] = []
    for index, sentence in enumerate(candidates):
        folded = sentence.casefold()
        keyword_score = sum(
            1.0 / (rank + 1)
            for rank, phrase in enumerate(top_phrases)
            if phrase.tag in folded or phrase.surface.casefold() in folded
        )
        # News and blog writing puts the point first: earlier sentences get a bonus that fades.
        position_score = 1.0 / (1.0 + 0.2 * index) + (0.3 if index == 0 else 0.0)
        words = _content_words(sentence)
        title_overlap = len(words & title_words) / math.sqrt(len(title_words)) if title_words and words else 0.0
        score = keyword_score + 0.8 * position_score + 0.4 * title_overlap
        if len(sentence) > 300:
            score *= 0.7
        scored.append((score, index))

    wanted = 2 if count <= 4 else 3 if count <= 12 else 4
    best = sorted(scored, key=lambda item: (-item[0], item[1]))[:wanted]
    while len(best) > MIN_SUMMARY_SENTENCES and sum(len(candidates[index]) for _, index in best) > SUMMARY_CHAR_BUDGET:
        best.pop()  # drop the weakest
    return [candidates[index] for index in sorted(index for _, index in best)]


def _fallback_sentences(
    candidates: Sequence[str],
    description: str,
    title: str,
    language: str | None,
    templates: _Templates,
    site_name: str | None,
) -> list[str]:
    """Too little text: what there is, the description, then sentences built from title and site."""
    pool = list(candidates)
    for sentence in split_sentences(description, language):
        if sentence.casefold() not in {existing.casefold() for existing in pool}:
            pool.append(sentence)
    pool = pool[:MAX_SUMMARY_SENTENCES]
    if len(pool) >= MIN_SUMMARY_SENTENCES:
        return pool
    site = templates.summary_site.format(site=_inline(site_name)) if site_name else ""
    if title:
        opener = templates.summary_titled.format(title=_quoted(title, templates), site=site)
    else:
        opener = templates.summary_untitled.format(site=site)
    sentences = [opener, *pool]
    if len(sentences) < MIN_SUMMARY_SENTENCES:
        sentences.append(templates.summary_no_text)
    return sentences


def _terminated(sentence: str, templates: _Templates) -> str:
    sentence = sentence.strip()
    if ends_sentence(sentence):
        return sentence
    return sentence.rstrip(",;:、，") + ("。" if has_cjk(sentence[-1:]) else templates.period)


def _content_words(value: str) -> set[str]:
    return set(re.findall(r"\w{3,}", value.casefold()))


# --- save why ------------------------------------------------------------------------------------------


def _save_why(
    tags: Sequence[str],
    keyphrases: Sequence[Keyphrase],
    source: str,
    title: str,
    site_name: str | None,
    templates: _Templates,
) -> str:
    site = templates.why_site.format(site=_inline(site_name)) if site_name else ""
    surfaces = {phrase.tag: phrase.surface for phrase in keyphrases}
    topics = [_surface_form(tag, source, surfaces.get(tag)) for tag in tags[:2]]
    topics = [topic for topic in (_inline(topic) for topic in topics) if topic]
    if topics:
        return templates.why_topics.format(topics=templates.joiner.join(topics), site=site)
    if title:
        return templates.why_title.format(title=_quoted(title, templates), site=site)
    return templates.why_plain.format(site=site)


def _surface_form(tag: str, source: str, keyphrase_surface: str | None) -> str:
    """The spelling the page uses most for ``tag`` ("Wärmepumpen", "machine learning"), else the tag."""
    if has_cjk(tag):
        return tag
    pattern = r"(?<!\w)" + r"[\s\-]+".join(re.escape(word) for word in tag.split()) + r"(?!\w)"
    forms: Counter[str] = Counter()
    for match in re.finditer(pattern, source, re.IGNORECASE):
        before = source[: match.start()].rstrip(" \t\"'“„«(")
        # A capital at the start of a line or sentence says nothing about how the phrase is spelled.
        initial = not before or before.endswith(("\n", ".", "!", "?", ":", "|"))
        # Sentence-initial forms still count as candidates (weight 0) for phrases that only start sentences.
        forms[match.group(0)] += 0 if initial else 1
    if forms:
        form = max(forms, key=lambda candidate: (forms[candidate], candidate.islower()))
        return collapse_whitespace(form)
    return keyphrase_surface or tag


def _inline(value: str | None) -> str:
    """A fragment safe to embed mid-sentence: no sentence-ending punctuation, bounded length."""
    if not value:
        return ""
    value = re.sub(r"[.!?…]+(\s+|$)", r", ", collapse_whitespace(value))
    value = re.sub(r"[。！？]+", "、", value)
    return truncate_at_word(value.strip(" ,、"), 120)


def _quoted(title: str, templates: _Templates) -> str:
    opening, closing = templates.quotes
    return f"{opening}{_inline(title)}{closing}"


# --- helpers -------------------------------------------------------------------------------------------


def _title_core(title: str | None, site_name: str | None) -> str:
    """The title without a " | Site Name" part, which says nothing about the topic."""
    if not title:
        return ""
    parts = _TITLE_SEPARATOR.split(title)
    if len(parts) > 1 and site_name:
        site = site_name.casefold()
        kept = [part for part in parts if part.casefold() != site and site not in part.casefold()]
        if kept:
            return " – ".join(kept)
    return title


def _fallback_tag_sources(title: str, content: PageContent, language: str | None) -> list[str]:
    """Words for tags when the text yields no keyphrase: title words, then the site's domain and name."""
    skip = stopwords(language)
    words = [word for word in re.findall(r"\w+", title) if len(word) >= 3 and word.lower() not in skip]
    sources: list[str] = sorted(words, key=len, reverse=True)[:3]
    domain = _domain_label(content.canonical_url)
    if domain:
        sources.append(domain)
    if content.site_name and normalize_tag(content.site_name):
        sources.append(content.site_name)
    return sources


_SECOND_LEVEL: Final = frozenset({"co", "com", "org", "net", "ac", "gov", "edu", "ne", "or", "go"})


def _domain_label(url: str | None) -> str | None:
    """``https://blog.example.co.uk/x`` → ``example``."""
    if not url:
        return None
    host = (urlsplit(url).hostname or "").removeprefix("www.")
    labels = [label for label in host.split(".") if label]
    if len(labels) < 2 or all(label.isdigit() for label in labels):
        return None
    if len(labels) >= 3 and labels[-2] in _SECOND_LEVEL:
        return labels[-3]
    return labels[-2]
