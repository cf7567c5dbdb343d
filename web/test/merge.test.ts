import assert from "node:assert/strict";
import { test } from "node:test";
import { baseAfterSent, materializeBookmark, materializeCollection, newestFirst, pageRecordApplies, skeleton } from "../src/merge.ts";
import type { Bookmark, LocalBookmark, Op } from "../src/model.ts";
import { normalizeUrl, provisionalDomain, urlProblem } from "../src/urls.ts";
import { checkTagInput } from "../../clients/shared/tags.ts";

const at = "2025-01-01T00:00:00.000Z";
const base: LocalBookmark = { ...skeleton("b1", at), url: "https://a.test/", title: "Server title", summary: "S", enrichmentStatus: "completed" };

test("queued edits show over a newer server copy; server-owned fields come from the server", () => {
  const ops: Op[] = [{ seq: 1, kind: "put", id: "b1", fields: { title: "Mine" }, createdAt: at }];
  const newer = { ...base, title: "Enriched title", summary: "New summary", tags: ["ai"] };
  const view = materializeBookmark(newer, ops);
  assert.equal(view?.title, "Mine");
  assert.equal(view?.summary, "New summary");
  assert.deepEqual(view?.tags, ["ai"]);
});

test("ops replay in order: delete then put revives, put then delete hides", () => {
  const put: Op = { seq: 2, kind: "put", id: "b1", fields: { isFavorite: true }, createdAt: at };
  const del: Op = { seq: 1, kind: "delete", id: "b1", createdAt: at };
  assert.equal(materializeBookmark(base, [del, put])?.deleted, false);
  assert.equal(materializeBookmark(base, [{ ...put, seq: 1 }, { ...del, seq: 2 }])?.deleted, true);
  assert.equal(materializeBookmark(undefined, [del]), undefined);
});

test("a new bookmark gets a provisional domain until the server's arrives", () => {
  const view = materializeBookmark(undefined, [{ seq: 1, kind: "put", id: "n", fields: { url: "https://www.Example.com/x" }, createdAt: at }]);
  assert.equal(view?.domain, "example.com");
  assert.equal(view?.enrichmentStatus, "pending");
});

test("after a PUT the server's answer is the base; after a DELETE a tombstone", () => {
  const answer = { ...base, title: "From server" } as Bookmark;
  const put: Op = { seq: 1, kind: "put", id: "b1", fields: { title: "x" }, createdAt: at };
  assert.equal(baseAfterSent(base, put, answer)?.title, "From server");
  assert.equal(baseAfterSent(base, { seq: 2, kind: "delete", id: "b1", createdAt: at }, null)?.deleted, true);
  assert.equal(baseAfterSent(undefined, { seq: 2, kind: "delete", id: "zz", createdAt: at }, null)?.deleted, true);
});

test("a collection PUT on a deleted collection creates it again at the top level", () => {
  const gone = { id: "c", name: "Old", parentId: "p", createdAt: at, updatedAt: at, deleted: true };
  const view = materializeCollection(gone, [{ seq: 1, kind: "collection-put", id: "c", fields: { name: "New" }, createdAt: at }]);
  assert.deepEqual([view?.name, view?.parentId, view?.deleted], ["New", null, false]);
});

test("typed tags: blank pieces between commas are not tags; a tag the server refuses is explained, never dropped", () => {
  assert.deepEqual(checkTagInput(" News , news,, Tech, "), { tags: ["News", "Tech"], error: null });
  assert.match(checkTagInput(`ok, ${"x".repeat(65)}`).error ?? "", /at most 64 characters/);
  assert.match(checkTagInput(Array.from({ length: 51 }, (_, i) => `t${i}`).join(",")).error ?? "", /at most 50 tags/);
  assert.equal(checkTagInput("a\u0007b").tags, null);
});

test("newest first by clientSavedAt, else createdAt", () => {
  const a = { ...base, clientBookmarkId: "a", clientSavedAt: "2025-02-01T00:00:00Z" };
  const b = { ...base, clientBookmarkId: "b", clientSavedAt: null, createdAt: "2025-03-01T00:00:00Z" };
  assert.deepEqual([a, b].sort(newestFirst).map((x) => x.clientBookmarkId), ["b", "a"]);
});

test("URL normalization matches the server's rules", () => {
  assert.equal(normalizeUrl("HTTPS://www.Example.com:443/a?utm_source=x&b=1&fbclid=z#frag"), "https://example.com/a?b=1");
  assert.equal(normalizeUrl("http://example.com"), "http://example.com/");
  assert.equal(normalizeUrl("https://youtube.com/watch?v=1&si=abc"), "https://youtube.com/watch?v=1");
  assert.equal(normalizeUrl("https://other.com/?si=abc"), "https://other.com/?si=abc");
  assert.equal(normalizeUrl("ftp://example.com/"), null);
  assert.equal(normalizeUrl("not a url"), null);
  assert.equal(provisionalDomain("https://www.Bücher.de/x"), "xn--bcher-kva.de");
  assert.match(urlProblem("http://exa mple.com/") ?? "", /host/);
});

test("a delta page never replaces a newer base: a page read before our write committed arrives after its answer", () => {
  const answered = { updatedAt: "2026-11-27T12:33:52.001725Z" };
  assert.equal(pageRecordApplies({ updatedAt: "2026-11-27T12:33:51.943593Z" }, answered), false);
  assert.equal(pageRecordApplies({ updatedAt: "2026-11-27T12:33:52.001725Z" }, answered), true);
  assert.equal(pageRecordApplies({ updatedAt: "2026-11-27T12:33:52.001726Z" }, answered), true);
  assert.equal(pageRecordApplies({ updatedAt: "2026-11-27T12:33:51.000000Z" }, undefined), true);
});

test("positions compare in time order whatever their number of fractional digits", () => {
  // A base written locally carries milliseconds; the server's positions carry microseconds.
  assert.equal(pageRecordApplies({ updatedAt: "2026-11-27T12:33:51.557123Z" }, { updatedAt: "2026-11-27T12:33:51.557Z" }), true);
  assert.equal(pageRecordApplies({ updatedAt: "2026-11-27T12:33:51.556999Z" }, { updatedAt: "2026-11-27T12:33:51.557Z" }), false);
  assert.equal(pageRecordApplies({ updatedAt: "2026-11-27T12:33:52Z" }, { updatedAt: "2026-11-27T12:33:51.999999Z" }), true);
});
