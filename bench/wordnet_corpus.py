"""A search corpus of real English text: WordNet 3.0's synsets as bookmarks (used by ``bench/search_corpus.py``).

Needs Debian's ``wordnet-base`` (``apt-get install --no-install-recommends wordnet-base``: the files
``/usr/share/wordnet/data.{noun,verb,adj,adv}``, 117,659 synsets). Nothing is downloaded.

One synset is one bookmark: title = its lemma names (``dog, domestic dog, Canis familiaris``), description =
its gloss (definition and example sentences), tags = its lexicographer file's name (``animal``) and its part
of speech (``noun``), URL ``https://<lexfile>.wordnet.example/<pos>/<offset>/<first-lemma>`` (one domain per
lexicographer file, 45 in all). A seeded 15 % also have page text (about 2.5 KB): the glosses of the synsets
around it in WordNet's graph (hypernyms, hyponyms, parts, similar and derived words), breadth first, each as
``lemma: gloss.``; real text too, so its words follow the same natural frequency distribution. The library
of ``size`` bookmarks is a seeded sample of the synsets: the same corpus every run for a given seed and size.

Query sets and the labelled relevance set are drawn from the corpus's own document frequencies (the words
as the index's exact part sees them: folded, split on non-alphanumerics).
"""

from __future__ import annotations

import functools
import random
import re
import unicodedata
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import snowballstemmer

WORDNET_DIR = Path("/usr/share/wordnet")
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
# lexnames(5WN): lexicographer file number → name.
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
# Pointers followed to build a page's text: hypernyms, hyponyms, instance links, part/member/substance
# meronyms and holonyms, similar to, also see, derivationally related, pertainyms, domains.
PAGE_POINTERS = {"@", "@i", "~", "~i", "%m", "%s", "%p", "#m", "#s", "#p", "&", "^", "+", "\\", ";c", "-c"}
PAGE_SHARE = 0.15
PAGE_CHARS = 2500
_STEMMER = snowballstemmer.stemmer("english")
_TOKEN = re.compile(r"[0-9a-z]+")
_ADJ_MARKER = re.compile(r"\((a|p|ip)\)$")
# The most frequent English function words: left out of generated two-word and gloss-word queries
# (people type content words), not out of anything indexed.
STOPWORDS = frozenset(
    "a an the of or and to in on for with by as at from that this is be are was it its which who whom "
    "what when where not no any some one two into out up down over under than then so such used use "
    "being having has have had been something someone especially usually often etc e g i".split()
)


@dataclass(frozen=True, slots=True)
class Synset:
    key: str  # pos letter + offset, e.g. n02084071
    lexname: str  # e.g. noun.animal
    pos: str  # n v a s r
    lemmas: tuple[str, ...]
    gloss: str
    pointers: tuple[str, ...]  # keys of related synsets (PAGE_POINTERS only)


@dataclass(frozen=True, slots=True)
class Document:
    index: int
    synset: Synset
    title: str
    description: str
    tags: tuple[str, str]
    url: str
    domain: str
    minutes: int  # saved this many minutes after the corpus's base date
    is_archived: bool
    is_favorite: bool
    page_text: str | None

    @property
    def bookmark_id(self) -> str:
        return f"wn-{self.synset.key}"


def fold_tokens(text: str) -> list[str]:
    """Words as the index's exact part sees them, near enough: accents folded, lower case, alphanumeric runs."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return _TOKEN.findall("".join(c for c in decomposed if not unicodedata.combining(c)))


@functools.cache
def stem(word: str) -> str:
    """The English Snowball stem, as PostgreSQL's 'english' configuration makes it (near enough)."""
    return str(_STEMMER.stemWord(word))


def read_synsets(directory: Path = WORDNET_DIR) -> dict[str, Synset]:
    """Every synset of WordNet's data files (license header lines skipped)."""
    if not (directory / "data.noun").exists():
        raise SystemExit(f"{directory}/data.noun not found: apt-get install --no-install-recommends wordnet-base")
    synsets: dict[str, Synset] = {}
    for letter, name in POS_FILES.items():
        with open(directory / f"data.{name}", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.startswith("  "):
                    continue
                head, _, gloss = line.partition(" | ")
                fields = head.split()
                offset, lexfile, pos, count = fields[0], int(fields[1]), fields[2], int(fields[3], 16)
                words = fields[4 : 4 + 2 * count : 2]
                lemmas = tuple(_ADJ_MARKER.sub("", w).replace("_", " ") for w in words)
                rest = fields[4 + 2 * count :]
                pointer_count = int(rest[0])
                pointers = []
                for i in range(pointer_count):
                    symbol, target, target_pos = rest[1 + 4 * i : 4 + 4 * i]
                    if symbol in PAGE_POINTERS:
                        pointers.append(("a" if target_pos == "s" else target_pos) + target)
                key = letter + offset
                synsets[key] = Synset(key, LEXNAMES[lexfile], pos, lemmas, gloss.strip(), tuple(pointers))
    return synsets


def _slug(text: str) -> str:
    return "-".join(fold_tokens(text)) or "entry"


def page_text(synset: Synset, synsets: dict[str, Synset], chars: int = PAGE_CHARS) -> str:
    """The glosses of the synsets around ``synset`` (breadth first over :data:`PAGE_POINTERS`)."""
    seen = {synset.key}
    queue: deque[str] = deque(synset.pointers)
    parts = [f"{synset.lemmas[0]}: {synset.gloss}."]
    size = len(parts[0])
    while queue and size < chars:
        key = queue.popleft()
        if key in seen or key not in synsets:
            continue
        seen.add(key)
        other = synsets[key]
        part = f"{other.lemmas[0]}: {other.gloss}."
        parts.append(part)
        size += len(part) + 1
        queue.extend(other.pointers)
    return " ".join(parts)[: chars + chars // 5]


@dataclass
class Corpus:
    documents: list[Document]
    seed: int
    # Per document: its title+tag words, its description words, its page words (sets).
    head_words: list[frozenset[str]] = field(default_factory=list)
    description_words: list[frozenset[str]] = field(default_factory=list)
    page_words: list[frozenset[str]] = field(default_factory=list)
    df: Counter[str] = field(default_factory=Counter)
    # English stems of the title+tags and of the description of the documents with page text (their
    # index holds English stems too: "organisms" in a title matches "organism"); empty for the others.
    head_stems: list[frozenset[str]] = field(default_factory=list)
    description_stems: list[frozenset[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for doc in self.documents:
            head = frozenset(fold_tokens(doc.title + " " + " ".join(doc.tags)))
            description = frozenset(fold_tokens(doc.description))
            page = frozenset(fold_tokens(doc.page_text or ""))
            self.head_words.append(head)
            self.description_words.append(description)
            self.page_words.append(page)
            self.head_stems.append(frozenset(map(stem, head)) if doc.page_text else frozenset())
            self.description_stems.append(frozenset(map(stem, description)) if doc.page_text else frozenset())
            self.df.update(head | description | page | frozenset(fold_tokens(doc.url)))

    def in_head(self, index: int, words: Iterable[str]) -> bool:
        """Every word in the title or tags (exactly, or by its English stem where the index has stems)."""
        head, stems = self.head_words[index], self.head_stems[index]
        return all(w in head or stem(w) in stems for w in words)

    def in_description(self, index: int, words: Iterable[str]) -> bool:
        """Every word in the title, tags or description (likewise)."""
        own = self.head_words[index] | self.description_words[index]
        stems = self.head_stems[index] | self.description_stems[index]
        return all(w in own or stem(w) in stems for w in words)

    def stats(self) -> dict[str, object]:
        pages = [d.page_text for d in self.documents if d.page_text]
        words = sum(len(fold_tokens(d.title + " " + d.description + " " + (d.page_text or ""))) for d in self.documents)
        return {
            "documents": len(self.documents),
            "with_page_text": len(pages),
            "page_text_chars_avg": round(sum(map(len, pages)) / max(1, len(pages))),
            "description_chars_avg": round(sum(len(d.description) for d in self.documents) / len(self.documents)),
            "distinct_words": len(self.df),
            "running_words": words,
            "domains": len({d.domain for d in self.documents}),
        }


def build(
    size: int,
    seed: int = 1,
    directory: Path = WORDNET_DIR,
    page_share: float = PAGE_SHARE,
    page_chars: int = PAGE_CHARS,
) -> Corpus:
    """``size`` documents (at most every synset, 117,659): a seeded sample, saved over five years;
    ``page_share`` of them with about ``page_chars`` characters of page text."""
    synsets = read_synsets(directory)
    keys = sorted(synsets)
    if size > len(keys):
        raise SystemExit(f"WordNet has {len(keys):,} synsets; asked for {size:,}")
    rng = random.Random(seed)
    chosen = rng.sample(keys, size)
    documents = []
    for index, key in enumerate(chosen):
        synset = synsets[key]
        group = synset.lexname.split(".", 1)[1].lower()
        domain = f"{group}.wordnet.example"
        pos_name = POS_NAMES[synset.pos]
        has_page = rng.random() < page_share
        documents.append(
            Document(
                index=index,
                synset=synset,
                title=", ".join(synset.lemmas),
                description=synset.gloss,
                tags=(group, pos_name),
                url=f"https://{domain}/{pos_name}/{synset.key[1:]}/{_slug(synset.lemmas[0])}",
                domain=domain,
                minutes=rng.randrange(5 * 365 * 24 * 60),
                is_archived=rng.random() < 0.1,
                is_favorite=rng.random() < 0.05,
                page_text=page_text(synset, synsets, page_chars) if has_page else None,
            )
        )
    return Corpus(documents, seed)


# --- query sets ------------------------------------------------------------------------------------------

KINDS = ("one_word_common", "one_word_medium", "one_word_rare", "two_words", "phrase", "word_filter",
         "filter_only", "no_match")  # fmt: skip


def _cycle(items: list[str], count: int) -> list[str]:
    return [items[i % len(items)] for i in range(count)] if items else []


def _nearest(corpus: Corpus, share: float, count: int) -> list[str]:
    """The ``count`` words whose document frequency is nearest ``share`` of the library."""
    target = share * len(corpus.documents)
    return sorted(corpus.df, key=lambda w: (abs(corpus.df[w] - target), w))[:count]


def query_sets(corpus: Corpus, per_kind: int = 150, seed: int = 2) -> dict[str, list[str]]:
    """``per_kind`` queries of each of :data:`KINDS`, from the corpus's own word frequencies (seeded)."""
    rng = random.Random(seed)
    n = len(corpus.documents)
    df = corpus.df
    alpha = [w for w in sorted(df) if w.isalpha() and len(w) > 2]
    # The rows with page text have English stems in their index: "earths" matches every "earth" there.
    # A word's reach is bounded by the documents of every word sharing its stem.
    stem_df: Counter[str] = Counter()
    for word, count in df.items():
        stem_df[stem(word)] += count
    medium = [w for w in alpha if 0.007 * n <= df[w] <= stem_df[stem(w)] <= 0.015 * n and w not in STOPWORDS]
    rare = [w for w in alpha if 2 <= df[w] <= stem_df[stem(w)] <= 5]
    content = {w for w in alpha if df[w] >= max(3, n // 2000) and w not in STOPWORDS}
    two_words: list[str] = []
    phrases: list[str] = []
    word_filter: list[str] = []
    order = list(range(n))
    rng.shuffle(order)
    for i in order:
        doc = corpus.documents[i]
        words = fold_tokens(doc.description.split(";")[0])
        usable = sorted({w for w in words if w in content})
        if len(usable) >= 2 and len(two_words) < per_kind:
            two_words.append(" ".join(rng.sample(usable, 2)))
        bigrams = [(a, b) for a, b in zip(words, words[1:], strict=False) if a in content and b in content]
        if bigrams and len(phrases) < per_kind:
            a, b = rng.choice(bigrams)
            phrases.append(f'"{a} {b}"')
        if usable and len(word_filter) < per_kind:
            word = rng.choice(usable)
            which = len(word_filter) % 3
            if which == 0:
                word_filter.append(f"{word} tag:{doc.tags[0]}")
            elif which == 1:
                word_filter.append(f"{word} domain:{doc.domain}")
            else:
                word_filter.append(f"{word} -is:archived")
        if min(len(two_words), len(phrases), len(word_filter)) >= per_kind:
            break
    groups = sorted({d.tags[0] for d in corpus.documents})
    domains = sorted({d.domain for d in corpus.documents})
    filters = []
    for i in range(per_kind):
        which = i % 4
        if which == 0:
            filters.append(f"tag:{rng.choice(groups)}")
        elif which == 1:
            filters.append(f"domain:{rng.choice(domains)}")
        elif which == 2:
            filters.append(f"tag:{rng.choice(groups)} -is:archived")
        else:
            filters.append("is:favorite")
    absent: list[str] = []
    while len(absent) < per_kind:
        word = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(7))
        if word not in df:
            absent.append(word)
    return {
        "one_word_common": _cycle(_nearest(corpus, 0.10, 5), per_kind),
        "one_word_medium": _cycle(rng.sample(medium, min(per_kind, len(medium))), per_kind),
        "one_word_rare": _cycle(rng.sample(rare, min(per_kind, len(rare))), per_kind),
        "two_words": two_words,
        "phrase": phrases,
        "word_filter": word_filter,
        "filter_only": filters,
        "no_match": absent,
    }


# --- the labelled relevance set --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Labelled:
    """A query and the grade of every document it should find: 2 = all its words in the title or tags
    (what the contract ranks first), 1 = all in the description, none in the title/tags (page text not
    counted: the grade says what a person would call relevant from the bookmark itself). Words match
    exactly, or by their English stem in the documents with page text (whose index has English stems)."""

    kind: str  # lemma | gloss
    q: str
    target: str  # the bookmark the query was made from
    grades: dict[str, int]


def _grades(corpus: Corpus, words: Iterable[str]) -> dict[str, int]:
    wanted = list(words)
    grades = {}
    for i, doc in enumerate(corpus.documents):
        if corpus.in_head(i, wanted):
            grades[doc.bookmark_id] = 2
        elif corpus.in_description(i, wanted):
            grades[doc.bookmark_id] = 1
    return grades


def labelled_set(corpus: Corpus, count: int = 50, seed: int = 3) -> list[Labelled]:
    """``count`` queries: half a one-word lemma of a synset (its synset and every other synset named by it
    are grade 2; glosses using it grade 1), half two content words of a synset's definition."""
    rng = random.Random(seed)
    n = len(corpus.documents)
    out: list[Labelled] = []
    order = list(range(n))
    rng.shuffle(order)
    for i in order:
        doc = corpus.documents[i]
        lemma_words = fold_tokens(doc.synset.lemmas[0])
        if len(lemma_words) != 1:
            continue
        word = lemma_words[0]
        # A word that names a few synsets and appears in other glosses: title matches to rank first.
        if not word.isalpha() or word in STOPWORDS or not 20 <= corpus.df[word] <= max(60, n // 500):
            continue
        out.append(Labelled("lemma", word, doc.bookmark_id, _grades(corpus, [word])))
        if len(out) >= count // 2:
            break
    content = {w for w, f in corpus.df.items() if w.isalpha() and len(w) > 3 and w not in STOPWORDS and f >= 5}
    for i in order:
        doc = corpus.documents[i]
        words = sorted({w for w in fold_tokens(doc.description.split(";")[0]) if w in content})
        if len(words) < 2:
            continue
        pair = rng.sample(words, 2)
        grades = _grades(corpus, pair)
        if not 3 <= len(grades) <= 200:
            continue
        out.append(Labelled("gloss", " ".join(pair), doc.bookmark_id, grades))
        if len(out) >= count:
            break
    return out


def iter_batches(documents: list[Document], size: int) -> Iterator[list[Document]]:
    for start in range(0, len(documents), size):
        yield documents[start : start + size]
