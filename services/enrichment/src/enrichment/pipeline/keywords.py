"""Keyphrases and tags: YAKE keyword extraction, tag normalization and reuse of the user's existing tags.

YAKE is statistical (no model, no download) and ships stopword lists for ~35 languages. It tokenizes on
whitespace, so for Japanese the text is first cut into script runs (kanji, katakana, Latin) and each run is
handed to YAKE as an opaque ASCII word; YAKE's features (position, frequency, spread, context) do not
look at the letters, so its scores stay meaningful. Chinese has no such cue, so it gets a frequency
n-gram extractor instead.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import snowballstemmer
import yake

from enrichment.pipeline.text import ends_sentence, has_cjk, normalize_paragraphs, split_sentences

__all__ = [
    "MAX_TAGS",
    "SNOWBALL_LANGUAGES",
    "Keyphrase",
    "TextIndex",
    "choose_tags",
    "extract_keyphrases",
    "normalize_tag",
    "prefer_frequent_cores",
    "stopwords",
    "tag_key",
]

MAX_TAGS: Final = 8
TARGET_NEW_TAGS: Final = 6
"""Tags beyond this many are only added when they are the user's own existing tags."""
TAG_MAX_WORDS: Final = 3
TAG_MAX_CHARS: Final = 32
KEYPHRASE_SAMPLE_CHARS: Final = 30_000
"""YAKE is pure Python and roughly linear in text length; the start of a page carries its topics."""

# French and Italian elisions glue the article to the noun ("l'intelligence"); the tag is the noun.
_ELISION: Final = re.compile(
    r"\b(?:l|d|j|m|n|s|t|c|qu|jusqu|lorsqu|puisqu|dell|dall|nell|sull|all|quell|un)['’](?=\w)", re.IGNORECASE
)
_WORD: Final = re.compile(r"\w+(?:[-.'’+#&]\w+)*[+#]*")
_KEY_PART: Final = re.compile(r"[\w+#]+")
# Characters kept inside a tag word: "node.js", "c++", "c#", "at&t", "e-mail".
_INNER_PUNCTUATION: Final = frozenset("-.+#&")
# ISO 639-1 → the Snowball stemmer of that language: the algorithms of PostgreSQL's built-in text search
# configurations, which the bookmarks service's search stems with, so a tag and a search word that
# PostgreSQL takes for one word share a key here too. Other languages (and none) are not stemmed.
# PostgreSQL 16's Dutch configuration runs Snowball's original Dutch stemmer, which Snowball 3 calls
# dutch_porter.
SNOWBALL_LANGUAGES: Final = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch_porter",
    "en": "english", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil",
    "tr": "turkish", "yi": "yiddish",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Keyphrase:
    surface: str
    """As written in the text (case preserved)."""
    tag: str
    """Normalized tag spelling (lowercase)."""
    key: str
    """Spelling-insensitive identity (see :func:`tag_key`)."""


# --- normalization -------------------------------------------------------------------------------------


def normalize_tag(raw: str) -> str | None:
    """Lowercase, punctuation stripped, spaces collapsed; None when nothing tag-like (≤ 3 words, ≤ 32 chars)."""
    value = _ELISION.sub("", unicodedata.normalize("NFKC", raw)).lower().replace("’", "'")
    words: list[str] = []
    for chunk in value.split():
        word = "".join(char if _is_word_char(char) else " " for char in chunk)
        for part in word.split():
            cleaned = _trim_word(part)
            if cleaned:
                words.append(cleaned)
    if not words or len(words) > TAG_MAX_WORDS:
        return None
    tag = " ".join(words)
    # At least one letter and two characters: "c#" and "go" are tags, "2024" and "x" are not.
    if len(tag) > TAG_MAX_CHARS or not any(char.isalpha() for char in tag):
        return None
    if len(tag) < 2 and not has_cjk(tag):
        return None
    return tag


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char in _INNER_PUNCTUATION or unicodedata.category(char) in ("Mn", "Mc")


def _trim_word(word: str) -> str:
    word = word.lstrip("-.+#&")
    # Trailing "+"/"#" belong to names like c++ and c#; other trailing punctuation is sentence debris.
    match = re.fullmatch(r"(.*?\w)([+#]*)[-.&+#]*", word)
    if match is None:
        return ""
    return match.group(1) + match.group(2)


def tag_key(tag: str, language: str | None = None) -> str:
    """Identity of a tag ignoring case, hyphens, spacing and inflection in ``language``.

    "Machine-Learning", "machine learning" and, in English, "machine learnings" share a key; in German
    "Wärmepumpen" and "Wärmepumpe" share one too. Words are folded and stemmed by the language's Snowball
    stemmer, as search indexes them, so "news" and "new" stay apart; without a language search stems,
    words are only lowercased.
    """
    value = _ELISION.sub("", unicodedata.normalize("NFKC", tag)).lower()
    return "".join(_stem(part, language) for part in _KEY_PART.findall(value))


def _stem(word: str, language: str | None) -> str:
    """The word as search indexes it: folded (accents and case), then stemmed, in a stemmed language."""
    algorithm = SNOWBALL_LANGUAGES.get((language or "").replace("_", "-").split("-")[0].lower())
    if algorithm is None or not word.isalpha():
        return word
    folded = "".join(char for char in unicodedata.normalize("NFKD", word.casefold()) if not unicodedata.combining(char))
    return _stem_word(algorithm, folded)


# A Snowball stemmer keeps its work in the instance, and pages are analysed in worker threads: one
# stemmer per thread and language. Stems are remembered across threads (pages repeat their words).
_THREAD_STEMMERS: Final = threading.local()


@functools.lru_cache(maxsize=65_536)
def _stem_word(algorithm: str, word: str) -> str:
    stemmers: dict[str, Any] = _THREAD_STEMMERS.__dict__.setdefault("by_algorithm", {})
    stemmer = stemmers.get(algorithm)
    if stemmer is None:
        stemmer = stemmers[algorithm] = snowballstemmer.stemmer(algorithm)
    stem: str = stemmer.stemWord(word)
    return stem


# --- stopwords -----------------------------------------------------------------------------------------

# YAKE names its Czech list "cz"; every other file uses the ISO 639-1 code.
_YAKE_LANGUAGE_ALIASES: Final = {"cs": "cz", "nb": "no", "nn": "no"}


def _yake_language(language: str | None) -> str:
    code = (language or "en").lower()
    return _YAKE_LANGUAGE_ALIASES.get(code, code)


@functools.lru_cache(maxsize=64)
def stopwords(language: str | None) -> frozenset[str]:
    """YAKE's built-in stopword list for ``language`` (empty set when it has none)."""
    extractor = yake.KeywordExtractor(lan=_yake_language(language))
    return frozenset(word for word in extractor.stopword_set if word)


# --- keyphrases ----------------------------------------------------------------------------------------


def extract_keyphrases(text: str, language: str | None, *, top: int = 20) -> list[Keyphrase]:
    """Best keyphrases of ``text`` first, deduplicated by :func:`tag_key`, each a valid tag."""
    sample = text[:KEYPHRASE_SAMPLE_CHARS]
    if not sample.strip():
        return []
    if language == "zh" or (language is None and _mostly_han(sample)):
        raw = _chinese_keyphrases(sample, top=top * 2)
    elif language == "ja" or (language is None and re.search(r"[\u3040-\u30ff]", sample)):
        raw = _japanese_keyphrases(sample, top=top * 2)
    else:
        raw = _yake_keyphrases(sample, language, top=top * 2)
    words_to_skip = stopwords(language)
    phrases: list[Keyphrase] = []
    seen: set[str] = set()
    for surface in raw:
        tag = normalize_tag(surface)
        if tag is None or _only_stopwords_or_numbers(tag, words_to_skip):
            continue
        key = tag_key(tag, language)
        if not key or key in seen:
            continue
        seen.add(key)
        phrases.append(Keyphrase(surface=surface, tag=tag, key=key))
        if len(phrases) == top:
            break
    return phrases


def _only_stopwords_or_numbers(tag: str, words_to_skip: frozenset[str]) -> bool:
    return all(word in words_to_skip or not any(char.isalpha() for char in word) for word in tag.split())


def _yake_input(text: str) -> str:
    # YAKE joins lines with spaces; a heading without a period would otherwise run into the next sentence.
    lines = normalize_paragraphs(text).split("\n")
    return "\n".join(line if ends_sentence(line) else f"{line}." for line in lines if line)


def _yake_keyphrases(text: str, language: str | None, *, top: int) -> list[str]:
    extractor = yake.KeywordExtractor(
        lan=_yake_language(language), n=TAG_MAX_WORDS, top=top, stopwords=set(stopwords(language))
    )
    return [str(keyword) for keyword, _score in extractor.extract_keywords(_yake_input(text))]


_KANJI: Final = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヶ"
_KATAKANA: Final = r"\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
_JA_TOKEN: Final = re.compile(rf"[{_KANJI}]+|[{_KATAKANA}]+|[A-Za-z0-9][A-Za-z0-9+#.\-]*[A-Za-z0-9+#]|[A-Za-z]")


def _japanese_keyphrases(text: str, *, top: int) -> list[str]:
    """YAKE over script runs: hiragana (particles, inflections) and punctuation separate candidates."""
    words_to_skip = stopwords("ja")
    aliases: dict[str, str] = {}
    originals: dict[str, str] = {}

    def alias(token: str) -> str:
        if token not in aliases:
            aliases[token] = _ascii_alias(len(aliases))
            originals[aliases[token]] = token
        return aliases[token]

    sentences_out: list[str] = []
    for sentence in split_sentences(unicodedata.normalize("NFKC", text), "ja"):
        out: list[str] = []
        previous_end: int | None = None
        for match in _JA_TOKEN.finditer(sentence):
            token = match.group(0)
            usable = (len(token) >= 2 or token.isascii()) and token.lower() not in words_to_skip
            if previous_end is not None and (match.start() != previous_end or not usable):
                out.append(",")
            if usable:
                out.append(alias(token))
            previous_end = match.end() if usable else None
        if out:
            sentences_out.append(" ".join(out) + " .")
    if not sentences_out:
        return []
    # No deduplication inside YAKE: it compares spellings, and the aliases are deliberately alike.
    extractor = yake.KeywordExtractor(lan="ja", n=TAG_MAX_WORDS, top=top, dedup_lim=1.0, stopwords=set())
    phrases: list[str] = []
    for keyword, _score in extractor.extract_keywords("\n".join(sentences_out)):
        parts = [originals.get(part) for part in str(keyword).split()]
        if all(parts):
            phrases.append(_join_japanese([part for part in parts if part]))
    return phrases


def _ascii_alias(index: int) -> str:
    letters = []
    index += 26 * 26  # at least three letters: YAKE treats very short words specially
    while index:
        index, remainder = divmod(index, 26)
        letters.append(chr(ord("a") + remainder))
    return "qz" + "".join(reversed(letters))


def _join_japanese(parts: Sequence[str]) -> str:
    # Adjacent runs were written without a space ("機械学習モデル"); Latin runs keep one between them.
    joined = parts[0]
    for part in parts[1:]:
        joined += f" {part}" if joined[-1].isascii() and part[0].isascii() else part
    return joined


_HAN_RUN: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Function characters that almost never sit inside a Chinese content word; they split runs into phrases.
_ZH_BREAKS: Final = re.compile(r"[的了是在和与及或把被就都而也还又这那其之于对从向很并但却所吗呢吧啊着过给让将已]")
# Frequent words that YAKE's single-character Chinese list does not cover and that are never topics.
_ZH_COMMON: Final = frozenset(
    "可以 我们 他们 你们 已经 需要 通过 进行 开始 没有 因为 所以 如果 但是 以及 目前 许多 越来越多 近年来 "
    "这些 那些 一些 一个 这个 那个 什么 怎么 如何 可能 应该 能够 认为 表示 时候 现在 今天 问题 方面 其中".split()
)
_LATIN_WORD: Final = re.compile(r"[A-Za-z][A-Za-z0-9+#.\-]*[A-Za-z0-9+#]")


def _mostly_han(text: str) -> bool:
    han = len(_HAN_RUN.findall(text))
    return han > 0 and not re.search(r"[\u3040-\u30ff]", text)


def _chinese_keyphrases(text: str, *, top: int) -> list[str]:
    """Repeated 2–6 character n-grams, preferring the longest spelling with the same frequency."""
    normalized = unicodedata.normalize("NFKC", text)
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    position = 0
    for run in _HAN_RUN.findall(normalized):
        for chunk in _ZH_BREAKS.split(run):
            for size in range(2, 7):
                for start in range(len(chunk) - size + 1):
                    gram = chunk[start : start + size]
                    counts[gram] += 1
                    first_seen.setdefault(gram, position)
            position += 1
    english = stopwords("en")
    for word in _LATIN_WORD.findall(normalized):
        if word.lower() not in english:
            counts[word] += 1
            first_seen.setdefault(word, position)
    minimum = 2 if sum(counts.values()) > 40 else 1
    zh_stop = stopwords("zh") | _ZH_COMMON
    candidates = [gram for gram, count in counts.items() if count >= minimum and gram not in zh_stop]
    kept: list[str] = []
    for gram in sorted(candidates, key=len, reverse=True):
        # "人工智" is only ever part of "人工智能": a shorter gram seen (almost) only inside a kept longer
        # one adds nothing.
        if any(gram in longer and counts[longer] >= 0.8 * counts[gram] for longer in kept):
            continue
        kept.append(gram)
    total_positions = max(position, 1)

    def score(gram: str) -> float:
        early = 1.0 + 0.5 * (1.0 - first_seen[gram] / total_positions)
        return counts[gram] * math.sqrt(len(gram)) * early

    return sorted(kept, key=score, reverse=True)[:top]


def prefer_frequent_cores(keyphrases: Sequence[Keyphrase], index: TextIndex, language: str | None) -> list[Keyphrase]:
    """Replace a phrase by a part of it that the text uses far more often, keeping the phrase's rank.

    YAKE likes three-word phrases that happen to appear once near the top ("energía solar crece"); the
    page's real topic is the part it keeps repeating ("energía solar").
    """
    skip = stopwords(language)
    refined: list[Keyphrase] = []
    seen: set[str] = set()
    for phrase in keyphrases:
        words = phrase.tag.split()
        best = phrase
        if len(words) > 1 and not has_cjk(phrase.tag):
            own_count = max(index.count(phrase.tag), 1)
            best_count = 0
            # The longest part that qualifies wins: "energía solar" rather than just "energía".
            for size in range(len(words) - 1, 0, -1):
                for start in range(len(words) - size + 1):
                    part = words[start : start + size]
                    if part[0] in skip or part[-1] in skip:
                        continue
                    tag = normalize_tag(" ".join(part))
                    if tag is None or _only_stopwords_or_numbers(tag, skip):
                        continue
                    count = index.count(tag)
                    if count >= 2 and count >= 2 * own_count and count > best_count:
                        best, best_count = Keyphrase(surface=tag, tag=tag, key=tag_key(tag, language)), count
                if best is not phrase:
                    break
        if best.key not in seen:
            seen.add(best.key)
            refined.append(best)
    return refined


# --- tags ----------------------------------------------------------------------------------------------


class TextIndex:
    """Counts how often a tag (by :func:`tag_key`) occurs in a text as one, two or three adjacent words."""

    def __init__(self, text: str, language: str | None = None) -> None:
        self._language = language
        self._lowered = _ELISION.sub("", unicodedata.normalize("NFKC", text)).lower()
        tokens = _WORD.findall(self._lowered)
        keys = [tag_key(token, language) for token in tokens]
        self._counts: Counter[str] = Counter()
        for size in range(1, TAG_MAX_WORDS + 1):
            for start in range(len(keys) - size + 1):
                self._counts["".join(keys[start : start + size])] += 1
        self.word_count = len(tokens)

    def count(self, tag: str) -> int:
        if has_cjk(tag):
            return self._lowered.count(unicodedata.normalize("NFKC", tag).lower())
        key = tag_key(tag, self._language)
        return self._counts.get(key, 0) if key else 0


def choose_tags(
    keyphrases: Sequence[Keyphrase],
    *,
    existing_tags: Iterable[str],
    body: TextIndex,
    heading: TextIndex,
    language: str | None = None,
    fallback: Sequence[str] = (),
) -> list[str]:
    """1–8 lowercase, deduplicated tags; the user's own tags first wherever they fit the page.

    An existing tag fits when it is one of the page's keyphrases (ignoring case, hyphens and plurals),
    appears in the title or description, or appears in the text at least twice (once for short texts).
    It is then used in the user's spelling instead of the page's.
    """
    existing = _existing_by_key(existing_tags, language)
    keyphrase_rank = {phrase.key: rank for rank, phrase in enumerate(keyphrases)}
    body_threshold = 1 if body.word_count < 150 else 2

    fitting: list[tuple[int, int, str]] = []
    for key, tag in existing.items():
        in_heading = heading.count(tag)
        in_body = body.count(tag)
        rank = keyphrase_rank.get(key)
        if rank is not None or in_heading > 0 or in_body >= body_threshold:
            # Keyphrase matches first (by keyphrase rank), then by how present the tag is.
            primary = rank if rank is not None else len(keyphrases)
            fitting.append((primary, -(in_heading * 3 + in_body), tag))
    tags = [tag for _, _, tag in sorted(fitting)][:MAX_TAGS]

    for phrase in keyphrases:
        if len(tags) >= TARGET_NEW_TAGS:
            break
        tag = existing.get(phrase.key, phrase.tag)
        if not _redundant(tag, tags, language):
            tags.append(tag)

    if not tags:
        for candidate in fallback:
            normalized = normalize_tag(candidate)
            if normalized is not None:
                tag = existing.get(tag_key(normalized, language), normalized)
                if not _redundant(tag, tags, language):
                    tags.append(tag)
            if len(tags) >= 3:
                break
    return tags[:MAX_TAGS]


def _existing_by_key(existing_tags: Iterable[str], language: str | None) -> dict[str, str]:
    by_key: dict[str, str] = {}
    for raw in existing_tags:
        if not isinstance(raw, str):
            continue
        tag = " ".join(raw.lower().split())
        if not tag or len(tag) > TAG_MAX_CHARS * 2:
            continue
        key = tag_key(tag, language)
        if key:
            by_key.setdefault(key, tag)
    return by_key


def _redundant(tag: str, chosen: Sequence[str], language: str | None) -> bool:
    """Same tag, or one contained in the other as whole words ("learning" next to "machine learning")."""
    key = tag_key(tag, language)
    for other in chosen:
        if tag_key(other, language) == key:
            return True
        if has_cjk(tag) or has_cjk(other):
            if tag in other or other in tag:
                return True
            continue
        mine, theirs = f" {_word_keys(tag, language)} ", f" {_word_keys(other, language)} "
        if mine in theirs or theirs in mine:
            return True
    return False


def _word_keys(tag: str, language: str | None) -> str:
    return " ".join(_stem(part, language) for part in _KEY_PART.findall(tag.lower()))
