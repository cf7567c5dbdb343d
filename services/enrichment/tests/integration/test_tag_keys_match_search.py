"""Enrichment's tag keys stem words exactly as the bookmarks service's search indexes them: the same
folding, then PostgreSQL's own Snowball stemmer of the page's language (its built-in text search
configuration). A tag and a search word that PostgreSQL takes for one word share a key, and words it keeps
apart keep different keys."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from bookmarks.search.folding import fold
from bookmarks.search.sql import config_for_language
from enrichment.pipeline.keywords import SNOWBALL_LANGUAGES, tag_key

WORDS = {
    "en": ["news", "new", "series", "windows", "policies", "policy", "networks", "libraries", "atlas", "boxes"],
    "de": ["Wärmepumpen", "Wärmepumpe", "Häuser", "Straßen", "Übersetzungen"],
    "fr": ["économiques", "économique", "villes", "élèves"],
    "es": ["ciudades", "ciudad", "noticias", "años"],
    "pt": ["cidades", "ações"],
    "it": ["città", "giornali", "giornale"],
    "nl": ["huizen", "fietsen", "boeken", "kranten"],
    "sv": ["städer", "stad"],
    "ru": ["новости", "города"],
}


def test_the_stemmed_languages_are_the_ones_search_stems() -> None:
    configs = {code: config_for_language(code) for code in SNOWBALL_LANGUAGES}
    algorithms = {code: name.removesuffix("_porter") for code, name in SNOWBALL_LANGUAGES.items()}
    assert configs == algorithms


@pytest.mark.parametrize("language", sorted(WORDS))
async def test_a_tag_key_is_the_lexeme_search_indexes(infra: Any, language: str) -> None:
    config = config_for_language(language)
    connection = await asyncpg.connect(infra.dsn("enrichment").replace("postgresql+asyncpg://", "postgresql://"))
    try:
        for word in WORDS[language]:
            lexemes = await connection.fetchval(
                "SELECT tsvector_to_array(to_tsvector($1::regconfig, $2))", config, fold(word)
            )
            assert lexemes == [tag_key(word, language)], (language, word)
    finally:
        await connection.close()
