// Where a highlight sits in a text, found again after the text changed: the rule of the server's
// services/bookmarks/src/bookmarks/highlights/anchoring.py, run by the web app and the extension against
// the same vectors (clients/shared/vectors/anchoring.json).
//
// 1. exact: every occurrence of the quote is a candidate;
// 2. fuzzy: when there is none, the substrings closest to the quote by edit distance, at most 20 % of its
//    length, are (the approximate search is passed in: each client bundles approx-string-match);
// 3. orphan: no candidate.
// Among candidates the context decides (characters of the prefix that end right before the candidate plus
// characters of the suffix that start right after it), then nearness to the hinted start, then the earlier
// start, then the earlier end. Offsets count Unicode code points, never UTF-16 units.
//
// This module imports nothing, so it builds and type-checks from either client's tree.

export type AnchorKind = "exact" | "fuzzy" | "orphan";

export interface Selector {
  quote: string;
  prefix?: string | null | undefined;
  suffix?: string | null | undefined;
  start?: number | null | undefined;
  end?: number | null | undefined;
}

export interface Anchor {
  kind: AnchorKind;
  start: number | null;
  end: number | null;
}

/** A match of approx-string-match's search: UTF-16 offsets in the searched text, end exclusive. */
export interface ApproxMatch {
  start: number;
  end: number;
  errors: number;
}

/** approx-string-match's default export: every match with at most ``maxErrors`` edits. */
export type ApproxSearch = (text: string, pattern: string, maxErrors: number) => ApproxMatch[];

export const MAX_ERROR_RATIO = 0.2;
/** More occurrences of a quote than this are not weighed one by one: the first ones are. */
export const MAX_CANDIDATES = 10_000;
/** Up to this many code points of text on each side of a quote are kept as its context. */
export const MAX_CONTEXT = 64;
/** The server's bound on a quote, in code points after trimming. */
export const MAX_QUOTE = 5_000;
// The server's approximate search compares bytes: a quote with this many distinct characters or more is
// matched exactly only, unless the text has fewer distinct characters than this. Kept for equal results.
const CODES = 255;

export const ORPHAN: Anchor = { kind: "orphan", start: null, end: null };

// -- code points and UTF-16 ----------------------------------------------------------------------

/** The number of code points of ``text``. */
export function codePointLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** The UTF-16 index of code point ``offset`` of ``text`` (its length past the end). */
export function utf16Index(text: string, offset: number): number {
  let i = 0;
  for (let n = 0; n < offset && i < text.length; n++) {
    const unit = text.charCodeAt(i);
    i += unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && isLow(text.charCodeAt(i + 1)) ? 2 : 1;
  }
  return i;
}

/** The code point offset of UTF-16 index ``index`` of ``text`` (inside a pair: the pair's own offset). */
export function codePointOffset(text: string, index: number): number {
  return codePointLength(text.slice(0, index)) - (index > 0 && index < text.length && isLow(text.charCodeAt(index)) && isHigh(text.charCodeAt(index - 1)) ? 1 : 0);
}

function isHigh(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** ``text`` from code point ``start`` to ``end`` (exclusive). */
export function sliceCodePoints(text: string, start: number, end?: number): string {
  const from = utf16Index(text, start);
  return end === undefined ? text.slice(from) : text.slice(from, from + utf16Index(text.slice(from), end - start));
}

// -- anchoring -----------------------------------------------------------------------------------

/**
 * A text as one UTF-16 unit per code point: each distinct character gets its own unit, so lengths,
 * offsets and edit distances of the encoded strings are those of the code points. Characters missing
 * from the text share one unit no character of the text has.
 */
class Encoded {
  readonly text: string;
  readonly alphabet: number;
  private readonly codes = new Map<string, number>();
  private readonly absent: number;

  constructor(text: string) {
    const units: number[] = [];
    for (const ch of text) {
      let code = this.codes.get(ch);
      if (code === undefined) {
        code = this.codes.size + 1;
        this.codes.set(ch, code);
      }
      units.push(code);
    }
    this.alphabet = this.codes.size;
    this.absent = this.codes.size + 1;
    this.text = fromUnits(units);
  }

  encode(other: string): string {
    const units: number[] = [];
    for (const ch of other) units.push(this.codes.get(ch) ?? this.absent);
    return fromUnits(units);
  }
}

function fromUnits(units: number[]): string {
  let out = "";
  for (let i = 0; i < units.length; i += 8192) out += String.fromCharCode(...units.slice(i, i + 8192));
  return out;
}

interface EncodedSelector {
  quote: string;
  prefix: string;
  suffix: string;
  hint: number | null;
  distinct: number;
}

/** Where ``selector`` is in ``text`` (see the module's rule). */
export function anchor(search: ApproxSearch, text: string, selector: Selector): Anchor {
  return anchorAll(search, text, [selector])[0] ?? ORPHAN;
}

/** ``anchor`` of each selector, the text encoded once for all of them. */
export function anchorAll(search: ApproxSearch, text: string, selectors: readonly Selector[]): Anchor[] {
  const encoded = new Encoded(text);
  return selectors.map((selector) =>
    anchorOne(search, encoded, {
      quote: encoded.encode(selector.quote),
      prefix: encoded.encode(selector.prefix ?? ""),
      suffix: encoded.encode(selector.suffix ?? ""),
      hint: selector.start ?? null,
      distinct: new Set(selector.quote).size,
    }),
  );
}

function anchorOne(search: ApproxSearch, encoded: Encoded, selector: EncodedSelector): Anchor {
  if (!selector.quote) return ORPHAN;
  const exact = occurrences(encoded.text, selector.quote);
  if (exact.length) {
    const [start, end] = best(encoded.text, selector, exact);
    return { kind: "exact", start, end };
  }
  const fuzzy = approximate(search, encoded, selector);
  if (fuzzy.length) {
    const [start, end] = best(encoded.text, selector, fuzzy);
    return { kind: "fuzzy", start, end };
  }
  return ORPHAN;
}

type Span = [number, number];

function occurrences(text: string, quote: string): Span[] {
  const found: Span[] = [];
  let at = text.indexOf(quote);
  while (at !== -1 && found.length < MAX_CANDIDATES) {
    found.push([at, at + quote.length]);
    at = text.indexOf(quote, at + 1);
  }
  return found;
}

/** The substrings at the smallest edit distance from the quote, if within the ratio. */
function approximate(search: ApproxSearch, encoded: Encoded, selector: EncodedSelector): Span[] {
  const errors = Math.floor(selector.quote.length * MAX_ERROR_RATIO);
  if (errors <= 0 || !encoded.text) return [];
  if (encoded.alphabet >= CODES && selector.distinct >= CODES) return [];
  const matches = search(encoded.text, selector.quote, errors);
  if (!matches.length) return [];
  const fewest = Math.min(...matches.map((m) => m.errors));
  return matches
    .filter((m) => m.errors === fewest)
    .sort((a, b) => a.end - b.end || a.start - b.start)
    .slice(0, MAX_CANDIDATES)
    .map((m): Span => [m.start, m.end]);
}

function context(text: string, selector: EncodedSelector, start: number, end: number): number {
  const before = text.slice(Math.max(0, start - selector.prefix.length), start);
  const after = text.slice(end, end + selector.suffix.length);
  let score = 0;
  while (score < before.length && score < selector.prefix.length && before[before.length - 1 - score] === selector.prefix[selector.prefix.length - 1 - score]) score++;
  let n = 0;
  while (n < after.length && n < selector.suffix.length && after[n] === selector.suffix[n]) n++;
  return score + n;
}

function best(text: string, selector: EncodedSelector, candidates: Span[]): Span {
  const rank = (span: Span): number[] => [
    -context(text, selector, span[0], span[1]),
    selector.hint === null ? 0 : Math.abs(span[0] - selector.hint),
    span[0],
    span[1],
  ];
  let winner = candidates[0] as Span;
  let winnerRank = rank(winner);
  for (const span of candidates.slice(1)) {
    const r = rank(span);
    for (let i = 0; i < r.length; i++) {
      const a = r[i] as number;
      const b = winnerRank[i] as number;
      if (a === b) continue;
      if (a < b) {
        winner = span;
        winnerRank = r;
      }
      break;
    }
  }
  return winner;
}

// -- selectors from a selection ------------------------------------------------------------------

/** A selector as a client makes it: every part known. */
export interface TextSelector {
  quote: string;
  prefix: string;
  suffix: string;
  start: number;
  end: number;
}

/**
 * The selector of ``text`` from code point ``start`` to ``end``: the quote trimmed of surrounding white
 * space (its offsets moved with it) and up to MAX_CONTEXT code points on each side. Null when only white
 * space is selected.
 */
export function selectorAt(text: string, start: number, end: number): TextSelector | null {
  const raw = sliceCodePoints(text, start, end);
  const lead = codePointLength(raw) - codePointLength(raw.replace(/^\s+/u, ""));
  const quote = raw.trim();
  if (!quote) return null;
  const from = start + lead;
  const to = from + codePointLength(quote);
  return {
    quote,
    prefix: sliceCodePoints(text, Math.max(0, from - MAX_CONTEXT), from),
    suffix: sliceCodePoints(text, to, to + MAX_CONTEXT),
    start: from,
    end: to,
  };
}
