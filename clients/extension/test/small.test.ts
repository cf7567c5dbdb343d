import assert from "node:assert/strict";
import { test } from "node:test";

import { bound, utf8Length } from "../src/lib/capture.ts";
import { LOOKUP_CACHE_ENTRIES, LOOKUP_TTL_MS, MAX_CAPTURE_HTML_BYTES } from "../src/lib/config.ts";
import { LookupCache } from "../src/lib/lookups.ts";
import { wireBookmark } from "./fakes.ts";
import { InvalidServerUrl, isSaveableUrl, normalizeServerUrl, originPattern, saveProblem } from "../src/lib/server.ts";

test("the server URL becomes an origin, and its permission pattern covers that origin only", () => {
  assert.equal(normalizeServerUrl(" http://127.0.0.1:8080/ "), "http://127.0.0.1:8080");
  assert.equal(normalizeServerUrl("https://Bookmarks.Example.com"), "https://bookmarks.example.com");
  assert.equal(originPattern("http://127.0.0.1:8080"), "http://127.0.0.1:8080/*");
  for (const bad of ["127.0.0.1:8080", "ftp://x.org", "https://u:p@x.org", "https://x.org/api", "nonsense"]) {
    assert.throws(() => normalizeServerUrl(bad), InvalidServerUrl, bad);
  }
});

test("only web pages can be saved", () => {
  assert.ok(isSaveableUrl("https://example.com/a"));
  for (const url of ["chrome://extensions", "about:blank", "file:///etc/passwd", "", undefined]) assert.ok(!isSaveableUrl(url));
  // What the server refuses is not saved, nor queued to be refused later.
  assert.ok(!isSaveableUrl(`https://example.com/${"a".repeat(2048)}`));
  assert.match(saveProblem("http://exa mple.com/") ?? "", /host/);
});

test("a capture is bounded by its UTF-8 size, not its length in characters", () => {
  const ascii = "a".repeat(MAX_CAPTURE_HTML_BYTES);
  assert.deepEqual(bound(ascii), { html: ascii });
  const wide = "é".repeat(MAX_CAPTURE_HTML_BYTES / 2 + 1); // fewer characters than the limit, more bytes
  assert.ok(wide.length < MAX_CAPTURE_HTML_BYTES && utf8Length(wide) > MAX_CAPTURE_HTML_BYTES);
  assert.deepEqual(bound(wide), { skipped: "too-large" });
  assert.deepEqual(bound(null), { skipped: "too-large" });
});

test("a lone surrogate in the page becomes U+FFFD, so the server gets valid UTF-8 text", () => {
  assert.deepEqual(bound("<p>a\ud800b \ud83d\ude00</p>"), { html: "<p>a\ufffdb \ud83d\ude00</p>" });
});

test("lookup answers expire after LOOKUP_TTL_MS and the cache holds a bounded number", () => {
  let now = 0;
  const cache = new LookupCache(() => now);
  const bookmark = wireBookmark();
  cache.set("https://a.test/", bookmark);
  cache.set("https://b.test/", null);
  now = LOOKUP_TTL_MS - 1;
  assert.equal(cache.get("https://a.test/"), bookmark);
  assert.equal(cache.get("https://b.test/"), null);
  assert.equal(cache.get("https://c.test/"), undefined);
  now = LOOKUP_TTL_MS;
  assert.equal(cache.get("https://a.test/"), undefined);
  for (let i = 0; i <= LOOKUP_CACHE_ENTRIES; i += 1) cache.set(`https://${i}.test/`, null);
  assert.equal(cache.get("https://0.test/"), undefined);
  assert.equal(cache.get(`https://${LOOKUP_CACHE_ENTRIES}.test/`), null);
});

test("forgetting a bookmark drops every URL it was looked up under", () => {
  const cache = new LookupCache();
  const bookmark = wireBookmark();
  cache.set("https://a.test/?utm_source=x", bookmark);
  cache.set("https://www.a.test/", bookmark);
  cache.forget("https://a.test/", "b1");
  assert.equal(cache.get("https://www.a.test/"), undefined);
});
