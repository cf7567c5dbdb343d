// The server's rules as the client core runs them, against the vectors the server's tests run too
// (clients/shared/vectors: tags.json, urls.json, query.json).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { QueryError, canonical, parseQuery } from "../../clients/shared/query.ts";
import { InvalidTags, normalizeTags, tagKey } from "../../clients/shared/tags.ts";
import { InvalidUrl, normalizeUrl } from "../../clients/shared/urls.ts";

function vectors<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../../clients/shared/vectors/${name}`, import.meta.url), "utf8")) as T;
}

const tags = vectors<{ cases: { note?: string; input: unknown[]; output?: string[]; error?: string }[]; keys: { tag: string; key: string }[] }>("tags.json");
const urls = vectors<{ cases: { note?: string; input: string; url?: string; domain?: string; error?: string }[] }>("urls.json");
const queries = vectors<{ cases: { note?: string; input: string; canonical?: string; error?: string; part?: string | null }[] }>("query.json");

const label = (c: { note?: string; input: unknown }) => `${c.note ?? ""} ${JSON.stringify(c.input).slice(0, 80)}`;

test("user tags: the server's stored list, or the server's refusal", () => {
  for (const c of tags.cases) {
    if (c.error === undefined) assert.deepEqual(normalizeTags(c.input), c.output, label(c));
    else assert.throws(() => normalizeTags(c.input), InvalidTags, label(c));
  }
  for (const { tag, key } of tags.keys) assert.equal(tagKey(tag), key, tag);
});

test("URL normalization: the server's normalized URL and domain, or the server's refusal", () => {
  for (const c of urls.cases) {
    if (c.error === undefined) assert.deepEqual(normalizeUrl(c.input), { url: c.url, domain: c.domain }, label(c));
    else assert.throws(() => normalizeUrl(c.input), InvalidUrl, label(c));
  }
});

test("search queries: the server's canonical form, or the server's refusal naming the same part", () => {
  for (const c of queries.cases) {
    if (c.error === undefined) {
      assert.equal(canonical(parseQuery(c.input)), c.canonical, label(c));
      continue;
    }
    assert.throws(() => parseQuery(c.input), (e: unknown) => e instanceof QueryError && e.part === (c.part ?? null), label(c));
  }
});
