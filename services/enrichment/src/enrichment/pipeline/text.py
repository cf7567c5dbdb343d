"""Text helpers shared by extraction and analysis: whitespace, sentences, scripts, language detection."""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import Any, Final

__all__ = [
    "CJK_LANGUAGES",
    "collapse_whitespace",
    "detect_language",
    "ends_sentence",
    "has_cjk",
    "normalize_language_code",
    "normalize_paragraphs",
    "split_sentences",
    "truncate_at_word",
]

CJK_LANGUAGES: Final = frozenset({"ja", "zh", "ko"})
"""Languages written without spaces between sentences (and, except Korean, between words)."""

# Zero-width characters and the BOM carry no meaning in titles or text but defeat equality checks.
_INVISIBLE: Final = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def collapse_whitespace(value: str) -> str:
    """One space between words; str.split() also splits on NBSP and other Unicode spaces."""
    return " ".join(value.translate(_INVISIBLE).split())


def normalize_paragraphs(text: str) -> str:
    """Collapse whitespace inside each line, drop blank lines; newlines keep paragraph boundaries."""
    lines = (collapse_whitespace(line) for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


def truncate_at_word(value: str, limit: int, *, ellipsis: str = "…") -> str:
    """Cap ``value`` at ``limit`` characters, cutting at a word boundary when there is one nearby."""
    if len(value) <= limit:
        return value
    cut = value[: limit - len(ellipsis)]
    space = cut.rfind(" ")
    # Text without spaces (Japanese, Chinese, one long token) is cut mid-run rather than emptied.
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-–—") + ellipsis


# --- scripts -------------------------------------------------------------------------------------------

_CJK_CHAR: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def has_cjk(value: str) -> bool:
    return _CJK_CHAR.search(value) is not None


# --- sentences -----------------------------------------------------------------------------------------

# Full-width terminators end a sentence wherever they stand: these scripts put no space after them.
_CJK_END: Final = "。！？｡"
_LATIN_END: Final = ".!?…"
_CLOSERS: Final = "\"'”’»)]}」』）】〕〉》"
_OPENERS: Final = "\"'“‘«¿¡([{「『（【〔〈《"

_BOUNDARY: Final = re.compile(
    rf"(?P<cjk>[{re.escape(_CJK_END)}]+[{re.escape(_CLOSERS)}]*)"
    rf"|(?P<latin>[{re.escape(_LATIN_END)}]+[{re.escape(_CLOSERS)}]*)(?=\s)"
)

# Tokens that end in a period without ending the sentence, lowercased and without that final period.
# A single letter (initials, "z. B.", "M. Dupont") is handled generically and needs no entry.
_ABBREVIATIONS: Final = frozenset(
    {
        # English
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "inc", "ltd", "co",
        "corp", "no", "nos", "fig", "figs", "approx", "est", "dept", "gen", "gov", "sen", "rep", "rev",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k",
        "a.m", "p.m", "cf", "al", "ed", "eds", "vol", "pp", "ca", "mt", "ft",
        # German
        "z.b", "d.h", "u.a", "usw", "bzw", "vgl", "nr", "str", "evtl", "ggf", "inkl", "sog", "bzgl",
        "geb", "gest", "hr", "fr", "abs", "abb", "jh", "jhd", "mio", "mrd", "tel", "u.ä", "o.ä",
        # French
        "mme", "mlle", "mm", "p.ex", "env", "av", "bd", "éd", "hab", "chap",
        # Spanish, Italian, Portuguese
        "sra", "srta", "ud", "uds", "dra", "p.ej", "pág", "núm", "sig", "dott", "ecc", "pag", "ex",
        "dª", "sto", "sta",
        # Dutch
        "bijv", "o.a", "d.w.z", "enz", "dhr", "mevr", "blz", "zgn",
    }
)  # fmt: skip

# Languages that write ordinals as "3." ("am 3. Oktober"); a short number before a period does not end
# the sentence there.
_ORDINAL_PERIOD_LANGUAGES: Final = frozenset({"de", "da", "no", "nb", "nn", "fi", "cs", "sk", "hu", "sl", "hr", "et"})


def split_sentences(text: str, language: str | None = None) -> list[str]:
    """Split ``text`` into sentences; every line break is a boundary too (paragraphs, headings).

    Works for scripts that end sentences with 。！？ and no space, and for European languages where a
    period after an abbreviation, an initial or (in German and others) an ordinal does not end a sentence.
    """
    sentences: list[str] = []
    for line in normalize_paragraphs(text).split("\n"):
        sentences.extend(_split_line(line, language))
    return sentences


def _split_line(line: str, language: str | None) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(line):
        end = match.end()
        if match.group("latin") is not None and not _latin_boundary(line, match.start(), end, language):
            continue
        piece = line[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    rest = line[start:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def _latin_boundary(line: str, dot_start: int, end: int, language: str | None) -> bool:
    punctuation = line[dot_start:end]
    following = line[end:].lstrip()
    if not following:
        return True
    if "!" in punctuation or "?" in punctuation:
        return True
    first = following[0]
    if first.islower():
        # "… und dann" or "e.g. this": a sentence does not start in lowercase (in these scripts).
        return False
    if punctuation.startswith("."):
        token = line[:dot_start].rsplit(maxsplit=1)[-1] if line[:dot_start].strip() else ""
        token = token.lstrip(_OPENERS).lower()
        if token in _ABBREVIATIONS:
            return False
        letters = token.replace(".", "")
        if len(letters) == 1 and letters.isalpha():
            return False  # an initial: "J. Smith", "z. B."
        if token.isdigit() and len(token) <= 2 and (language or "") in _ORDINAL_PERIOD_LANGUAGES:
            return False
    return first.isupper() or first.isdigit() or first in _OPENERS or has_cjk(first) or not first.isalpha()


def ends_sentence(value: str) -> bool:
    stripped = value.rstrip(_CLOSERS + " ")
    return bool(stripped) and stripped[-1] in _LATIN_END + _CJK_END


# --- language ------------------------------------------------------------------------------------------

_LANGUAGE_CODE: Final = re.compile(r"^([a-zA-Z]{2,3})(?:[-_].*)?$")
# Below this many characters of letters the statistical guess is noise; the page's declaration wins.
_MIN_LETTERS_FOR_DETECTION: Final = 40
_MIN_CONFIDENCE: Final = 0.5
_DETECTION_SAMPLE: Final = 20_000

_identifier_lock = threading.Lock()
_identifier: Any = None


def normalize_language_code(value: str | None) -> str | None:
    """``de-DE``, ``de_AT``, ``DE`` → ``de``; None for anything that is not a language tag."""
    if not value:
        return None
    match = _LANGUAGE_CODE.match(value.strip())
    if match is None:
        return None
    code = match.group(1).lower()
    # Only two-letter codes are ISO 639-1; three-letter tags ("fil") have no two-letter form to give.
    return code if len(code) == 2 else None


def detect_language(text: str, *, declared: str | None = None) -> str | None:
    """ISO 639-1 code of ``text``, by py3langid (bundled model, no download); else the page's declaration."""
    declared_code = normalize_language_code(declared)
    sample = text[:_DETECTION_SAMPLE]
    letters = sum(1 for char in sample if char.isalpha())
    if letters == 0:
        return declared_code
    if letters < _MIN_LETTERS_FOR_DETECTION and declared_code is not None:
        return declared_code
    language, confidence = _classify(sample)
    if language is None:
        return declared_code
    if letters < _MIN_LETTERS_FOR_DETECTION and confidence < _MIN_CONFIDENCE:
        return declared_code
    return language


def _classify(text: str) -> tuple[str | None, float]:
    identifier = _get_identifier()
    # Normalizing width makes full-width Latin letters in CJK pages count as the Latin they are.
    language, confidence = identifier.classify(unicodedata.normalize("NFKC", text))
    return normalize_language_code(str(language)), float(confidence)


def _get_identifier() -> Any:
    global _identifier
    with _identifier_lock:
        if _identifier is None:
            from py3langid import langid

            # py3langid ≥ 0.4 loads its bundled model with from_model_file, 0.3 with from_pickled_model.
            identifier_class = langid.LanguageIdentifier
            loader = getattr(identifier_class, "from_model_file", None) or identifier_class.from_pickled_model
            _identifier = loader(langid.MODEL_FILE, norm_probs=True)
        return _identifier
