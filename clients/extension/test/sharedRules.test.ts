// The server's rules the extension applies before sending (user tags, and the URL rule behind isSaveableUrl),
// from the client core, against the vectors the server's tests run too (clients/shared/vectors).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { InvalidTags, MAX_TAGS, normalizeTags, parseTagInput, tagKey } from "../../../clients/shared/tags.ts";
import { InvalidUrl, normalizeUrl } from "../../../clients/shared/urls.ts";

function vectors<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../../../clients/shared/vectors/${name}`, import.meta.url), "utf8")) as T;
}

interface TagCase {
  note?: string;
  input: unknown[];
  output?: string[];
  error?: string;
}
interface UrlCase {
  note?: string;
  input: string;
  url?: string;
  domain?: string;
  error?: string;
}

const label = (c: { note?: string; input: unknown }): string => `${c.note ?? ""} ${JSON.stringify(c.input).slice(0, 80)}`;

test("user tags: the server's stored list, or the server's refusal", () => {
  const tags = vectors<{ cases: TagCase[]; keys: { tag: string; key: string }[] }>("tags.json");
  for (const c of tags.cases) {
    if (c.error === undefined) assert.deepEqual(normalizeTags(c.input), c.output, label(c));
    else assert.throws(() => normalizeTags(c.input), InvalidTags, label(c));
  }
  for (const { tag, key } of tags.keys) assert.equal(tagKey(tag), key, tag);
});

test("URL rule: the server's normalized URL, or the server's refusal", () => {
  for (const c of vectors<{ cases: UrlCase[] }>("urls.json").cases) {
    if (c.error === undefined) assert.deepEqual(normalizeUrl(c.input), { url: c.url, domain: c.domain }, label(c));
    else assert.throws(() => normalizeUrl(c.input), InvalidUrl, label(c));
  }
});

test("typed tags: blank pieces between commas are not tags; a refused tag is explained before sending", () => {
  assert.deepEqual(parseTagInput(" Reading, ideas,,reading , Straße, STRASSE "), ["Reading", "ideas", "Straße"]);
  assert.deepEqual(parseTagInput("  "), []);
  assert.throws(() => parseTagInput("x".repeat(65)), /at most 64 characters/);
  assert.throws(() => parseTagInput("a\u0007b"), InvalidTags);
  assert.throws(() => parseTagInput(Array.from({ length: MAX_TAGS + 1 }, (_, i) => `t${i}`).join(",")), /at most 50 tags/);
});
