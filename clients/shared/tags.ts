// User tags: the rule of the server's services/bookmarks/src/bookmarks/domain/tags.py (docs/api-guide.md,
// section 11), run by the web app and the extension against the same vectors (clients/shared/vectors/tags.json).
// Each tag is trimmed; it must then have 1-64 characters (code points) and no control character (category Cc)
// nor lone surrogate; tags are deduplicated by Unicode case folding (tagKey), keeping the first spelling and
// the order; at most 50 distinct tags. A tag the server would refuse is refused here, with a sentence fit to
// show: nothing is dropped silently.
//
// This module imports only unicode.ts, so it builds and type-checks from either client's tree.

import { caseFold, codePoints, strip } from "./unicode.ts";

export const MAX_TAGS = 50;
export const MAX_TAG_LENGTH = 64;

/** A list of tags the server would refuse; the message names the tag and is fit to show to a user. */
export class InvalidTags extends Error {
  override name = "InvalidTags";
}

const CONTROL_OR_SURROGATE = /[\p{Cc}\p{Cs}]/u;

/** The identity of a tag: two tags with the same key are the same tag (``Straße`` and ``STRASSE``). */
export function tagKey(tag: string): string {
  return caseFold(strip(tag));
}

export function sameTag(a: string, b: string): boolean {
  return tagKey(a) === tagKey(b);
}

function shown(tag: string): string {
  return codePoints(tag) > 24 ? `“${[...tag].slice(0, 24).join("")}…”` : `“${tag}”`;
}

/** The stored form of a list of tags, exactly as the server stores it; throws InvalidTags where the server
 * answers 400. */
export function normalizeTags(items: readonly unknown[]): string[] {
  const kept = new Map<string, string>();
  for (const item of items) {
    if (typeof item !== "string") throw new InvalidTags("Every tag must be text.");
    const tag = strip(item);
    if (!tag) throw new InvalidTags("A tag cannot be empty.");
    if (codePoints(tag) > MAX_TAG_LENGTH) {
      throw new InvalidTags(`A tag can have at most ${MAX_TAG_LENGTH} characters: ${shown(tag)} is longer.`);
    }
    if (CONTROL_OR_SURROGATE.test(tag)) throw new InvalidTags(`A tag cannot contain control characters: ${shown(tag)}.`);
    const key = caseFold(tag);
    if (!kept.has(key)) kept.set(key, tag);
  }
  if (kept.size > MAX_TAGS) throw new InvalidTags(`A bookmark can have at most ${MAX_TAGS} tags (this makes ${kept.size}).`);
  return [...kept.values()];
}

/** Tags typed as text, separated by commas; blank pieces between commas ("a, , b", a trailing comma) are not
 * tags. Throws InvalidTags like normalizeTags. */
export function parseTagInput(text: string): string[] {
  return normalizeTags(text.split(",").filter((piece) => strip(piece) !== ""));
}

export function formatTags(tags: readonly string[]): string {
  return tags.join(", ");
}

export type Checked = { tags: string[]; error: null } | { tags: null; error: string };

function checked(run: () => string[]): Checked {
  try {
    return { tags: run(), error: null };
  } catch (error) {
    if (error instanceof InvalidTags) return { tags: null, error: error.message };
    throw error;
  }
}

/** Like normalizeTags, but answers the refusal's sentence instead of throwing. */
export function checkTags(items: readonly unknown[]): Checked {
  return checked(() => normalizeTags(items));
}

/** Like parseTagInput, but answers the refusal's sentence instead of throwing. */
export function checkTagInput(text: string): Checked {
  return checked(() => parseTagInput(text));
}
