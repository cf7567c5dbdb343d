// The search language, for the local copy (offline search and the instant first answer). The parser is the
// server's, from the client core (clients/shared/query.ts): a query refused here is refused by the server,
// with the same offending part. Matching is local and simpler than the server's: words and phrases match as
// substrings of the folded fields (the server also searches page text and stems words).

import { type Condition, type Query, QueryError, parseQuery } from "../../clients/shared/query.ts";
import { fold, splitWords } from "../../clients/shared/unicode.ts";
import { isBroken } from "./links.ts";
import type { LocalBookmark } from "./model.ts";
import { savedAt } from "./merge.ts";

export { type Query, QueryError, fold, parseQuery };

function haystack(b: LocalBookmark): string {
  return fold(
    [b.title, b.url, b.domain, b.notes, b.description, b.summary, ...b.userTags, ...b.tags].filter(Boolean).join("\n"),
  );
}

/** What a local match needs beyond the bookmark: the bookmarks that hold a live highlight here. */
export interface MatchContext {
  highlighted: ReadonlySet<string>;
}

function matches(b: LocalBookmark, { filter }: Condition, context: MatchContext): boolean {
  switch (filter.kind) {
    case "tag":
      return [...b.userTags, ...b.tags].some((t) => splitWords(fold(t)).join(" ") === filter.tag);
    case "domain": {
      const domain = b.domain ?? "";
      return domain === filter.host || domain.endsWith(`.${filter.host}`);
    }
    case "collection":
      return b.collectionIds.includes(filter.collectionId);
    case "after":
      return savedAt(b).slice(0, 10) >= filter.day;
    case "before":
      return savedAt(b).slice(0, 10) < filter.day;
    case "link":
      return b.linkStatus === filter.status;
    case "is":
      return matchesFlag(b, filter.flag);
    case "has":
      return context.highlighted.has(b.clientBookmarkId);
  }
}

function matchesFlag(b: LocalBookmark, flag: string): boolean {
  switch (flag) {
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

/** A predicate for ``query``; words and phrases match as substrings of the folded fields. */
export function compile(
  query: Query,
  context: MatchContext = { highlighted: new Set() },
): (b: LocalBookmark) => boolean {
  const required = [...query.words, ...query.phrases];
  const excluded = [...query.excludedWords, ...query.excludedPhrases];
  return (b) => {
    for (const c of query.conditions) if (matches(b, c, context) === c.negated) return false;
    if (!required.length && !excluded.length) return true;
    const hay = haystack(b);
    for (const t of required) if (!hay.includes(t)) return false;
    for (const t of excluded) if (hay.includes(t)) return false;
    return true;
  };
}

/** Required words and phrases of a query, for highlighting local results. */
export function positiveWords(query: Query): string[] {
  return [...query.words, ...query.phrases];
}
