import assert from "node:assert/strict";
import { test } from "node:test";
import { skeleton } from "../src/merge.ts";
import type { LocalBookmark } from "../src/model.ts";
import { QueryError, compile, parseQuery } from "../src/query.ts";

function bookmark(fields: Partial<LocalBookmark>): LocalBookmark {
  return { ...skeleton("b1", "2025-03-01T10:00:00Z"), url: "https://www.example.com/a", domain: "example.com", ...fields };
}

test("words must all match, case and accents ignored", () => {
  const match = compile(parseQuery("ECONOMIQUE france"));
  assert.equal(match(bookmark({ title: "Politique économique", notes: "La France" })), true);
  assert.equal(match(bookmark({ title: "Politique économique" })), false);
});

test("phrases keep their order and negation excludes", () => {
  assert.equal(compile(parseQuery('"climate change"'))(bookmark({ title: "Climate change now" })), true);
  assert.equal(compile(parseQuery('"change climate"'))(bookmark({ title: "Climate change now" })), false);
  assert.equal(compile(parseQuery("climate -crypto"))(bookmark({ title: "climate and crypto" })), false);
  assert.equal(compile(parseQuery("“climate change”"))(bookmark({ title: "Climate change" })), true);
});

test("filters: tag, domain with subdomains, is:, dates, collection, and their negation", () => {
  const b = bookmark({ userTags: ["Café"], tags: ["ai"], domain: "blog.example.com", isFavorite: true, collectionIds: ["c1"] });
  assert.equal(compile(parseQuery("tag:cafe"))(b), true);
  assert.equal(compile(parseQuery("tag:AI"))(b), true);
  assert.equal(compile(parseQuery("domain:example.com"))(b), true);
  assert.equal(compile(parseQuery("domain:https://www.example.com/x"))(b), true);
  assert.equal(compile(parseQuery("domain:ample.com"))(b), false);
  assert.equal(compile(parseQuery("is:favorite -is:archived is:unread"))(b), true);
  assert.equal(compile(parseQuery("-is:favorite"))(b), false);
  assert.equal(compile(parseQuery("collection:c1"))(b), true);
  assert.equal(compile(parseQuery("after:2025-03-01 before:2025-03-02"))(b), true);
  assert.equal(compile(parseQuery("before:2025-03-01"))(b), false);
});

test("link health: link:<status> and is:broken (gone or unreachable)", () => {
  const gone = { ...bookmark({}), linkStatus: "gone" } as LocalBookmark;
  const fine = { ...bookmark({}), linkStatus: "ok" } as LocalBookmark;
  assert.equal(compile(parseQuery("link:gone"))(gone), true);
  assert.equal(compile(parseQuery("is:broken"))(gone), true);
  assert.equal(compile(parseQuery("is:broken"))(fine), false);
  assert.equal(compile(parseQuery("-link:ok"))(fine), false);
});

test("tag: compares the server's folded tag, so Straße finds STRASSE", () => {
  assert.equal(compile(parseQuery("tag:strasse"))(bookmark({ userTags: ["STRAßE"] })), true);
});

test("malformed queries are refused with a sentence naming the part", () => {
  assert.throws(() => parseQuery("re: budget"), (e: unknown) => e instanceof QueryError && e.part === "re:");
  assert.throws(() => parseQuery("is:nothing"), QueryError);
  assert.throws(() => parseQuery("after:2025-13-99"), QueryError);
  assert.throws(() => parseQuery('"open'), QueryError);
  assert.deepEqual(parseQuery('"re: budget"').phrases, ["re: budget"]);
});

test("is:broken finds gone and unreachable links; link: one status; an unknown status is refused", () => {
  const gone = bookmark({ linkStatus: "gone" });
  const moved = bookmark({ linkStatus: "moved" });
  const unchecked = bookmark({});
  assert.deepEqual([gone, moved, unchecked].map(compile(parseQuery("is:broken"))), [true, false, false]);
  assert.deepEqual([gone, moved, unchecked].map(compile(parseQuery("-is:broken"))), [false, true, true]);
  assert.deepEqual([gone, moved, unchecked].map(compile(parseQuery("link:Moved"))), [false, true, false]);
  assert.throws(() => parseQuery("link:dead"), QueryError);
});

test("has:highlights matches the bookmarks holding a live highlight on this device", () => {
  const context = { highlighted: new Set(["b1"]) };
  assert.equal(compile(parseQuery("has:highlights"), context)(bookmark({})), true);
  assert.equal(compile(parseQuery("has:highlights"), context)(bookmark({ clientBookmarkId: "b2" })), false);
  assert.equal(compile(parseQuery("-has:highlights"), context)(bookmark({ clientBookmarkId: "b2" })), true);
  assert.throws(() => parseQuery("has:notes"), QueryError);
});
