// The search language, parsed for the local copy (offline search and the instant first answer):
// words (all must match), "phrases", -negation, and the filters tag:, domain:, collection:, is:, link:,
// after:, before:. The server remains the reference; it also searches page text and stems words.

import { isBroken } from "./links.ts";
import type { LocalBookmark } from "./model.ts";
import { savedAt } from "./merge.ts";

export type Term =
  | { kind: "text"; value: string; negated: boolean }
  | { kind: "filter"; name: string; value: string; negated: boolean };

export class QueryError extends Error {}

const FILTERS = new Set(["tag", "domain", "collection", "is", "link", "after", "before"]);
const IS_VALUES = new Set(["favorite", "archived", "unread", "enriched", "pending", "failed", "broken"]);
const LINK_VALUES = ["ok", "moved", "gone", "blocked", "unreachable"];
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export function fold(text: string): string {
  return text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
}

function parseFilter(token: string, negated: boolean): Term {
  const colon = token.indexOf(":");
  const name = token.slice(0, colon).toLowerCase();
  const value = token.slice(colon + 1);
  if (!FILTERS.has(name)) throw new QueryError(`Unknown filter “${name}:”. Put it in quotes to search for it.`);
  if (!value) throw new QueryError(`“${name}:” needs a value.`);
  if (name === "is" && !IS_VALUES.has(value.toLowerCase())) throw new QueryError(`Unknown “is:${value}”.`);
  if (name === "link" && !LINK_VALUES.includes(value.toLowerCase())) {
    throw new QueryError(`Unknown “link:${value}”. Try ${LINK_VALUES.map((v) => `link:${v}`).join(", ")}.`);
  }
  if ((name === "after" || name === "before") && (!DATE.test(value) || Number.isNaN(Date.parse(value)))) {
    throw new QueryError(`“${name}:” needs a date like 2025-01-31.`);
  }
  return { kind: "filter", name, value, negated };
}

export function parseQuery(input: string): Term[] {
  const text = input.replace(/[“”„]/g, '"');
  const terms: Term[] = [];
  let i = 0;
  while (i < text.length) {
    if (/\s/.test(text[i] ?? "")) {
      i += 1;
      continue;
    }
    let negated = false;
    if (text[i] === "-" && i + 1 < text.length && !/\s/.test(text[i + 1] ?? "")) {
      negated = true;
      i += 1;
    }
    if (text[i] === '"') {
      const end = text.indexOf('"', i + 1);
      if (end < 0) throw new QueryError("A quote is not closed.");
      const phrase = text.slice(i + 1, end).trim();
      if (phrase) terms.push({ kind: "text", value: phrase, negated });
      i = end + 1;
      continue;
    }
    let end = i;
    while (end < text.length && !/\s/.test(text[end] ?? "")) end += 1;
    const token = text.slice(i, end);
    i = end;
    if (/^[a-z]+:/i.test(token)) terms.push(parseFilter(token, negated));
    else terms.push({ kind: "text", value: token, negated });
  }
  return terms;
}

function haystack(b: LocalBookmark): string {
  return fold(
    [b.title, b.url, b.domain, b.notes, b.description, b.summary, ...b.userTags, ...b.tags].filter(Boolean).join("\n"),
  );
}

function matchesFilter(b: LocalBookmark, name: string, value: string): boolean {
  const v = fold(value);
  switch (name) {
    case "tag":
      return [...b.userTags, ...b.tags].some((t) => fold(t) === v);
    case "domain": {
      const host = v.replace(/^[a-z]+:\/\//, "").replace(/^www\./, "").split(/[/:]/)[0] ?? "";
      const domain = (b.domain ?? "").toLowerCase();
      return domain === host || domain.endsWith(`.${host}`);
    }
    case "collection":
      return b.collectionIds.includes(value);
    case "link":
      return b.linkStatus === v;
    case "after":
      return savedAt(b).slice(0, 10) >= value;
    case "before":
      return savedAt(b).slice(0, 10) < value;
    default:
      return matchesIs(b, v);
  }
}

function matchesIs(b: LocalBookmark, value: string): boolean {
  switch (value) {
    case "favorite":
      return b.isFavorite;
    case "archived":
      return b.isArchived;
    case "unread":
      return !b.lastOpenedAt;
    case "enriched":
      return b.enrichmentStatus === "completed";
    case "pending":
      return ["pending", "processing", "retrying"].includes(b.enrichmentStatus);
    case "broken":
      return isBroken(b);
    default:
      return b.enrichmentStatus === "failed";
  }
}

/** A predicate for ``terms``; text terms match as substrings of the folded fields. */
export function compile(terms: readonly Term[]): (b: LocalBookmark) => boolean {
  const texts = terms.filter((t) => t.kind === "text").map((t) => ({ ...t, value: fold(t.value) }));
  const filters = terms.filter((t): t is Extract<Term, { kind: "filter" }> => t.kind === "filter");
  return (b) => {
    for (const f of filters) if (matchesFilter(b, f.name, f.value) === f.negated) return false;
    if (!texts.length) return true;
    const hay = haystack(b);
    for (const t of texts) if (hay.includes(t.value) === t.negated) return false;
    return true;
  };
}

/** Plain words of a query, for highlighting local results. */
export function positiveWords(terms: readonly Term[]): string[] {
  return terms.filter((t) => t.kind === "text" && !t.negated).map((t) => t.value);
}
