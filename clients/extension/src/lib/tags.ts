/** User tags as the server stores them: trimmed, 1-64 characters, no control character, deduplicated
 * case-insensitively keeping the first spelling, at most 50. Applied locally so the popup shows what
 * the server will store, and a bad tag is explained before anything is sent. */

export const MAX_TAGS = 50;
export const MAX_TAG_LENGTH = 64;

export class InvalidTags extends Error {}

// Unicode category Cc (C0, DEL and C1 controls).
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

export function parseTags(text: string): string[] {
  const tags: string[] = [];
  const seen = new Set<string>();
  for (const raw of text.split(",")) {
    const tag = raw.trim();
    if (!tag) continue;
    if ([...tag].length > MAX_TAG_LENGTH) throw new InvalidTags(`A tag can have at most ${MAX_TAG_LENGTH} characters.`);
    if (CONTROL.test(tag)) throw new InvalidTags("A tag cannot contain control characters.");
    const key = foldCase(tag);
    if (seen.has(key)) continue;
    seen.add(key);
    tags.push(tag);
  }
  if (tags.length > MAX_TAGS) throw new InvalidTags(`At most ${MAX_TAGS} tags, please.`);
  return tags;
}

export function formatTags(tags: readonly string[]): string {
  return tags.join(", ");
}

/** Close to Unicode case folding: upper then lower case maps ß to ss as the server's casefold does. */
function foldCase(tag: string): string {
  return tag.toUpperCase().toLowerCase();
}
