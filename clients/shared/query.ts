// The search language: the parser of the server's services/bookmarks/src/bookmarks/search/query.py
// (docs/api-guide.md, section 12), run by the web app against the same vectors (clients/shared/vectors/query.json).
// A query refused here is one the server answers with 400, and a query accepted here has the server's meaning
// (the same canonical form).
//
//     term    := ["-"] (filter | phrase | word)
//     filter  := name ":" (phrase | bare)    name = tag|domain|collection|is|has|link|after|before, any case
//     phrase  := quote ... quote             quotes: " “ ” „ (any of them closes)
//     word    := any run of non-space, non-quote characters
//
// Words and phrases are folded (unicode.ts fold: the server's search folding). A word or phrase without a
// letter or digit ("-", "...", '""') is dropped; "scheme://..." and "12:30" are words, not filters. Bounds:
// at most 500 characters and 20 terms; a filter value at most 200 characters.
//
// This module imports only unicode.ts and urls.ts, so it builds and type-checks from either client's tree.

import { codePoints, fold, hasWordChars, isSpace, splitWords, strip } from "./unicode.ts";
import { InvalidUrl, normalizeUrl } from "./urls.ts";

export const MAX_QUERY_CHARS = 500;
export const MAX_TERMS = 20;
export const MAX_FILTER_VALUE_CHARS = 200;

export const FLAGS = ["favorite", "archived", "unread", "enriched", "pending", "failed", "broken"] as const;
export const LINK_STATUSES = ["ok", "moved", "gone", "blocked", "unreachable"] as const;
export const HAS = ["highlights"] as const;
export type Flag = (typeof FLAGS)[number];
export type Has = (typeof HAS)[number];
export type LinkHealth = (typeof LINK_STATUSES)[number];

export type Filter =
  | { kind: "tag"; tag: string } // folded
  | { kind: "domain"; host: string } // as bookmarks store it: IDNA ASCII, lower case, no "www."
  | { kind: "collection"; collectionId: string }
  | { kind: "is"; flag: Flag }
  | { kind: "has"; what: Has }
  | { kind: "link"; status: LinkHealth }
  | { kind: "after" | "before"; day: string }; // YYYY-MM-DD; after: the day included; before: excluded

export interface Condition {
  filter: Filter;
  negated: boolean;
}

export interface Query {
  words: string[];
  phrases: string[];
  excludedWords: string[];
  excludedPhrases: string[];
  conditions: Condition[];
}

/** A query the server refuses; the message names the offending part and is fit to show to a user. */
export class QueryError extends Error {
  override name = "QueryError";
  readonly part: string | null;

  constructor(reason: string, part: string | null = null) {
    const shown = part === null ? "" : `: “${codePoints(part) > 60 ? `${[...part].slice(0, 60).join("")}…` : part}”`;
    super(`${reason}${shown}`);
    this.part = part;
  }
}

const QUOTES = "\"“”„";
const FILTER_NAME = /[A-Za-z]+:/y;
const DAY = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/;
const UNSTORABLE = /[\x00\p{Cs}]/u; // PostgreSQL text cannot hold them

interface Token {
  text: string; // the term as written, for messages
  negated: boolean;
  name: string | null; // filter name, lower case
  value: string;
  quoted: boolean;
}

/** The query's meaning; throws QueryError where the server answers 400. */
export function parseQuery(q: string): Query {
  if (!strip(q)) throw new QueryError("Type something to search for.");
  if (codePoints(q) > MAX_QUERY_CHARS) throw new QueryError(`A search can have at most ${MAX_QUERY_CHARS} characters.`);
  if (UNSTORABLE.test(q)) throw new QueryError("A search cannot contain NUL or unpaired surrogate characters.");
  const tokens = tokenize(q);
  if (tokens.length > MAX_TERMS) throw new QueryError(`A search can have at most ${MAX_TERMS} terms.`);
  const query = build(tokens);
  if (!query.words.length && !query.phrases.length && !query.excludedWords.length && !query.excludedPhrases.length && !query.conditions.length) {
    throw new QueryError("Nothing to search for: add a word, a phrase or a filter", strip(q));
  }
  return query;
}

/** Whether results are ranked by relevance: a required word or phrase. */
export function hasText(query: Query): boolean {
  return query.words.length > 0 || query.phrases.length > 0;
}

/** One text per meaning (case, accents, spacing and quote style removed), as the server writes it. */
export function canonical(query: Query): string {
  return [
    ...query.words,
    ...query.phrases.map((p) => `"${p}"`),
    ...query.excludedWords.map((w) => `-${w}`),
    ...query.excludedPhrases.map((p) => `-"${p}"`),
    ...query.conditions.map(renderCondition),
  ].join(" ");
}

function renderCondition({ filter, negated }: Condition): string {
  const sign = negated ? "-" : "";
  switch (filter.kind) {
    case "tag":
      return `${sign}tag:"${filter.tag}"`;
    case "domain":
      return `${sign}domain:${filter.host}`;
    case "collection":
      return `${sign}collection:"${filter.collectionId}"`;
    case "is":
      return `${sign}is:${filter.flag}`;
    case "has":
      return `${sign}has:${filter.what}`;
    case "link":
      return `${sign}link:${filter.status}`;
    default:
      return `${sign}${filter.kind}:${filter.day}`;
  }
}

function tokenize(q: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < q.length) {
    if (isSpace(q[pos] ?? "")) {
      pos += 1;
      continue;
    }
    const [token, next] = readTerm(q, pos);
    tokens.push(token);
    pos = next;
  }
  return tokens;
}

function readTerm(q: string, start: number): [Token, number] {
  let pos = start;
  const negated = q[pos] === "-";
  if (negated) pos += 1;
  let name: string | null = null;
  FILTER_NAME.lastIndex = pos;
  const match = FILTER_NAME.exec(q);
  if (match && !q.startsWith("//", pos + match[0].length)) {
    name = match[0].slice(0, -1).toLowerCase();
    pos += match[0].length;
  }
  if (pos < q.length && QUOTES.includes(q[pos] ?? "")) {
    const end = closingQuote(q, pos);
    return [{ text: q.slice(start, end + 1), negated, name, value: q.slice(pos + 1, end), quoted: true }, end + 1];
  }
  let end = pos;
  while (end < q.length && !isSpace(q[end] ?? "") && !QUOTES.includes(q[end] ?? "")) end += 1;
  return [{ text: q.slice(start, end), negated, name, value: q.slice(pos, end), quoted: false }, end];
}

function closingQuote(q: string, opening: number): number {
  for (let pos = opening + 1; pos < q.length; pos += 1) if (QUOTES.includes(q[pos] ?? "")) return pos;
  throw new QueryError("A quote is not closed", q.slice(opening));
}

function build(tokens: Token[]): Query {
  const query: Query = { words: [], phrases: [], excludedWords: [], excludedPhrases: [], conditions: [] };
  for (const token of tokens) {
    if (token.name !== null) {
      query.conditions.push({ filter: parseFilter(token), negated: token.negated });
      continue;
    }
    const text = splitWords(fold(token.value)).join(" ");
    if (!hasWordChars(text)) continue;
    const target = token.negated
      ? token.quoted ? query.excludedPhrases : query.excludedWords
      : token.quoted ? query.phrases : query.words;
    target.push(text);
  }
  return query;
}

function parseFilter(token: Token): Filter {
  const value = strip(token.value);
  const name = token.name ?? "";
  if (!value) throw new QueryError(`The filter ${name}: needs a value`, token.text);
  if (codePoints(value) > MAX_FILTER_VALUE_CHARS) {
    throw new QueryError(`A filter's value can have at most ${MAX_FILTER_VALUE_CHARS} characters`, token.text);
  }
  switch (name) {
    case "tag":
      return { kind: "tag", tag: splitWords(fold(value)).join(" ") };
    case "domain":
      return { kind: "domain", host: parseHost(value, token) };
    case "collection":
      return { kind: "collection", collectionId: value };
    case "is": {
      const flag = FLAGS.find((f) => f === value.toLowerCase());
      if (!flag) throw new QueryError(`Unknown is: value (known: ${FLAGS.map((f) => `is:${f}`).join(", ")})`, token.text);
      return { kind: "is", flag };
    }
    case "has": {
      const what = HAS.find((h) => h === value.toLowerCase());
      if (!what) throw new QueryError(`Unknown has: value (known: ${HAS.map((h) => `has:${h}`).join(", ")})`, token.text);
      return { kind: "has", what };
    }
    case "link": {
      const status = LINK_STATUSES.find((s) => s === value.toLowerCase());
      if (!status) throw new QueryError(`Unknown link: value (known: ${LINK_STATUSES.map((s) => `link:${s}`).join(", ")})`, token.text);
      return { kind: "link", status };
    }
    case "after":
    case "before":
      if (!isDay(value)) throw new QueryError(`${name}: needs a date like 2025-01-31`, token.text);
      return { kind: name, day: value };
  }
  throw new QueryError(`Unknown filter ${name}: (put the term in quotes to search for it)`, token.text);
}

// A real day of years 1-9999 (Python's date.fromisoformat).
function isDay(value: string): boolean {
  if (!DAY.test(value)) return false;
  const [year, month, day] = value.split("-").map(Number) as [number, number, number];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  return day <= days;
}

function parseHost(value: string, token: Token): string {
  try {
    return normalizeUrl(value.includes("://") ? value : `http://${value}`).domain;
  } catch (error) {
    if (error instanceof InvalidUrl) throw new QueryError("domain: needs a host name", token.text);
    throw error;
  }
}
