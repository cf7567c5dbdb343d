// The sync engine, store and database together (the real modules on an in-memory IndexedDB), against a
// scripted server at the fetch level: delta pages replayed, stale or cut short by a crash, and the queue.

import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import type { Bookmark, DeltaPage } from "../src/model.ts";
import { FakeServer, browser, crashAt, deferred, json, openTab, signedInTab, stored, timers, type Tab } from "./fakes.ts";

let server: FakeServer;

beforeEach(() => {
  server = new FakeServer();
  browser(server);
});

const live = (b: Bookmark) => ({ ...b, deleted: false, deletedAt: null });
const byId = <T extends { id?: string; clientBookmarkId?: string }>(records: T[]): T[] =>
  [...records].sort((a, b) => String(a.clientBookmarkId ?? a.id).localeCompare(String(b.clientBookmarkId ?? b.id)));

/** The cursors the delta requests carried, in order (null: none). */
function deltaCursors(): (string | null)[] {
  return server.seen
    .filter((r) => r.path.startsWith("/v1/bookmarks/delta"))
    .map((r) => new URL(r.path, "http://app.test").searchParams.get("cursor"));
}

/** Waits (a bounded number of turns of the event loop) until ``ready``. */
async function until(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ready(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(ready(), "the condition never held");
}

/** The device holds exactly the server's library: every live bookmark, collection and highlight, nothing queued. */
async function assertConverged(tab: Tab): Promise<void> {
  const device = await stored();
  assert.deepEqual(device.queue, []);
  assert.deepEqual(
    byId(device.bookmarks.filter((b) => !(b as { deleted?: boolean }).deleted)),
    byId([...server.bookmarks().values()].map(live)),
  );
  const liveCollections = device.collections.filter((c) => !(c as { deleted?: boolean }).deleted).map((c) => c.id).sort();
  assert.deepEqual(liveCollections, ["c1"]);
  assert.deepEqual(device.highlights.map((h) => [h.id, h.note]), [["h1", server.highlight("h1")!.note]]);
  assert.deepEqual(tab.store.list().map((b) => b.clientBookmarkId).sort(), [...server.bookmarks().keys()].sort());
}

function library(): void {
  server.saveBookmark("b1", { url: "https://one.test/", title: "One" });
  server.saveBookmark("b2", { url: "https://two.test/", title: "Two" });
  server.saveBookmark("b3", { url: "https://three.test/", title: "Three" });
  server.saveBookmark("b4", { url: "https://four.test/", title: "Four" });
  server.saveCollection("c1", { name: "Reading" });
  server.saveHighlight("h1", { bookmarkId: "b1", quote: "one", note: "first" });
}

// -- delta pages ----------------------------------------------------------------------------------------

test("a replayed delta page changes nothing; each sync starts again from the last request's cursor", async () => {
  server.pageSize = 2;
  server.saveBookmark("a", { url: "https://a.test/", title: "A" });
  server.saveBookmark("b", { url: "https://b.test/" });
  server.saveCollection("c1", { name: "Reading" });
  server.saveHighlight("h1", { bookmarkId: "a", quote: "q" });
  server.deleteRecord("bookmark", "gone");
  const tab = await signedInTab();
  await tab.sync.run(true);
  assert.deepEqual(deltaCursors(), [null, "pos-2", "pos-4"]);
  const first = await stored();
  assert.equal(first.cursor, "pos-4", "the last request's cursor, not null");
  assert.deepEqual(first.bookmarks.map((b) => b.clientBookmarkId).sort(), ["a", "b", "gone"]);

  await tab.sync.run(true); // the last page (the tombstone) again
  assert.deepEqual(deltaCursors(), [null, "pos-2", "pos-4", "pos-4"]);
  assert.deepEqual(await stored(), first);
  assert.deepEqual(tab.store.list().map((b) => b.clientBookmarkId), ["b", "a"]);

  // The same page applied twice by hand, with an unsent local edit of one of its records.
  const response = await server.fetch("/v1/bookmarks/delta?limit=1000", { headers: { Authorization: "Bearer access-1" } });
  const page = ((await response.json()) as { data: DeltaPage }).data;
  await tab.store.put("a", { title: "mine" });
  await tab.store.applyPage(page, "pos-4");
  const once = await stored();
  await tab.store.applyPage(page, "pos-4");
  assert.deepEqual(await stored(), once);
  assert.equal(tab.store.get("a")?.title, "mine", "the queued edit still shows over the replayed copy");
  assert.equal(once.queue.length, 1);
});

test("nudges during a sync fold into one follow-up pull: one sync in flight, then one more", async () => {
  library();
  const tab = await signedInTab();
  const gate = deferred();
  const delta = server.routes.get("GET /v1/bookmarks/delta")!;
  server.on("GET /v1/bookmarks/delta", async (request) => {
    await gate.promise;
    return delta(request);
  });
  const first = tab.sync.run(true);
  const nudges: Promise<void>[] = [];
  try {
    await until(() => deltaCursors().length === 1);
    for (let i = 0; i < 5; i++) nudges.push(tab.sync.run(true)); // the socket's bookmarks_changed, five times
    nudges.push(tab.sync.run(false)); // a local write meanwhile: the queued pull sends it too
    assert.equal(new Set(nudges).size, 1, "every request during the sync shares the one follow-up");
  } finally {
    gate.resolve();
  }
  await Promise.all([first, ...nudges]);
  assert.equal(deltaCursors().length, 2, "the sync in flight and one follow-up, not one per nudge");
  assert.equal(tab.sync.state, "synced");
  await tab.sync.run(true); // a nudge after the follow-up began makes a cycle of its own
  assert.equal(deltaCursors().length, 3);
});

test("a stale page never overwrites newer local state: records, tombstones, collections, highlights", async () => {
  library();
  const tab = await signedInTab();
  await tab.sync.run(true);
  const b1 = server.bookmark("b1")!;
  const earlier = "2025-12-31T00:00:00.000Z";
  const stale: DeltaPage = {
    cursor: null,
    nextCursor: null,
    upserts: [{ ...b1, title: "Old one", updatedAt: earlier }],
    tombstones: [{ clientBookmarkId: "b2", deletedAt: earlier }],
    collections: [{ ...server.collection("c1")!, name: "Old name", updatedAt: earlier }],
    collectionTombstones: [],
    highlights: [{ ...server.highlight("h1")!, note: "old note", updatedAt: earlier }],
    highlightTombstones: [],
  };
  const before = await stored();
  await tab.store.applyPage(stale, before.cursor ?? null);
  assert.deepEqual(await stored(), before);
  assert.equal(tab.store.get("b1")?.title, "One");
  assert.equal(tab.store.get("b2")?.deleted, false);
  assert.deepEqual(tab.store.collections().map((c) => c.name), ["Reading"]);
  assert.equal(tab.store.highlight("h1")?.note, "first");
  await assertConverged(tab);
});

test("a page read before our write reached the server, applied after its answer, keeps the write", async () => {
  server.saveBookmark("a", { url: "https://a.test/", title: "old" });
  const tab = await signedInTab();
  await tab.sync.run(true);
  // A page read now (holding "old"), delivered after the PUT's answer.
  const response = await server.fetch("/v1/bookmarks/delta?limit=1000", { headers: { Authorization: "Bearer access-1" } });
  const stalePage = await response.text();
  const delta = server.routes.get("GET /v1/bookmarks/delta")!;
  server.on("GET /v1/bookmarks/delta", () => new Response(stalePage, { status: 200 }));
  await tab.store.put("a", { title: "new" });
  await tab.sync.run(true);
  assert.deepEqual(server.calls().slice(-2), ["PUT /v1/bookmarks/a", "GET /v1/bookmarks/delta"]);
  assert.equal(tab.store.get("a")?.title, "new");
  assert.deepEqual((await stored()).bookmarks, [live(server.bookmark("a")!)]);
  server.on("GET /v1/bookmarks/delta", delta);
  await tab.sync.run(true);
  assert.equal(tab.store.get("a")?.title, "new");
});

test("a crash while a page's cursor is stored loses the page and the cursor together; the next start converges", async () => {
  server.pageSize = 2;
  library();
  const tab = await signedInTab();
  await tab.store.put("local", { url: "https://local.test/", title: "Written offline" });
  let cursorWrites = 0;
  const crash = crashAt((store, _value, key) => store === "meta" && key === "cursor" && ++cursorWrites === 2);
  try {
    await tab.sync.run(true);
  } finally {
    crash.undo();
  }
  assert.ok(crash.crashed());
  assert.equal(tab.sync.state, "error");
  // All or nothing: page 1 (b1, b2) and its cursor are stored; nothing of page 2 (b3, b4) is.
  const after = await stored();
  assert.equal(after.cursor, "pos-2");
  assert.deepEqual(after.bookmarks.map((b) => b.clientBookmarkId).sort(), ["b1", "b2", "local"]);
  assert.deepEqual(after.queue, [], "the write was answered before the pull");
  tab.db.close(); // the page is gone; a new one starts from the database

  const reloaded = await openTab();
  assert.deepEqual(reloaded.store.list().map((b) => b.clientBookmarkId).sort(), ["b1", "b2", "local"]);
  await reloaded.sync.run(true);
  assert.equal(reloaded.sync.state, "synced");
  assert.deepEqual(deltaCursors(), [null, "pos-2", "pos-2", "pos-4", "pos-6"]);
  await assertConverged(reloaded);
  assert.equal(server.count("PUT /v1/bookmarks/local"), 1, "the write was sent once");
});

test("a crash while a page's records are stored keeps the old cursor: nothing of the page is skipped", async () => {
  server.pageSize = 2;
  library();
  const tab = await signedInTab();
  const crash = crashAt((store) => store === "highlights"); // page 3: c1 and h1
  try {
    await tab.sync.run(true);
  } finally {
    crash.undo();
  }
  assert.ok(crash.crashed());
  const after = await stored();
  assert.equal(after.cursor, "pos-4");
  assert.deepEqual([after.collections, after.highlights], [[], []]);
  tab.db.close();

  const reloaded = await openTab();
  await reloaded.sync.run(true);
  assert.deepEqual(deltaCursors().slice(-1), ["pos-4"]);
  await assertConverged(reloaded);
  // The same tab recovers as well, without a reload: its memory follows only what was stored.
  const again = crashAt((store) => store === "collections");
  try {
    await reloaded.store.applyPage({ ...(await stalePageOf("c1")), cursor: "pos-4" }, "pos-9").catch(() => undefined);
  } finally {
    again.undo();
  }
  assert.ok(again.crashed());
  assert.equal((await stored()).cursor, "pos-4");
  assert.deepEqual(reloaded.store.collections().map((c) => c.name), ["Reading"]);
  await reloaded.sync.run(true);
  await assertConverged(reloaded);
});

/** A page renaming ``id`` at a newer position than the server's (as another device's write would). */
async function stalePageOf(id: string): Promise<DeltaPage> {
  return {
    cursor: null,
    nextCursor: null,
    upserts: [],
    tombstones: [],
    collections: [{ ...server.collection(id)!, name: "Renamed", updatedAt: "2027-01-01T00:00:00.000Z" }],
    collectionTombstones: [],
    highlights: [],
    highlightTombstones: [],
  };
}

test("a crash after the server accepted a write but before the queue forgot it sends it again; one record results", async () => {
  const tab = await signedInTab();
  await tab.store.put("a", { url: "https://a.test/", title: "A" });
  await tab.store.remove(["gone"]);
  const crash = crashAt((store) => store === "queue");
  try {
    await tab.sync.run(false);
  } finally {
    crash.undo();
  }
  assert.ok(crash.crashed());
  assert.equal((await stored()).queue.length, 2, "the answered write is still queued");
  tab.db.close();
  const reloaded = await openTab();
  await reloaded.sync.run(true);
  assert.deepEqual(server.calls().filter((c) => !c.includes("delta") && !c.includes("auth")), [
    "PUT /v1/bookmarks/a",
    "PUT /v1/bookmarks/a",
    "DELETE /v1/bookmarks/gone",
  ]);
  const device = await stored();
  assert.deepEqual(device.queue, []);
  assert.deepEqual(reloaded.store.list().map((b) => [b.clientBookmarkId, b.title]), [["a", "A"]]);
  assert.deepEqual(server.bookmarks().size, 1);
});

test("a cursor the server refuses starts that sync from scratch and converges", async () => {
  library();
  const tab = await signedInTab();
  await tab.db.setMeta("cursor", "forged");
  await tab.sync.run(true);
  assert.deepEqual(deltaCursors(), ["forged", null]);
  assert.equal(tab.sync.state, "synced");
  await assertConverged(tab);
});

// -- the queue ------------------------------------------------------------------------------------------

test("edits of one unsent bookmark fold into one PUT carrying every field", async () => {
  const tab = await signedInTab();
  await tab.store.put("a", { url: "https://a.test/", clientSavedAt: "2026-01-01T00:00:00.000Z" });
  await tab.store.put("a", { title: "T" });
  await tab.store.put("a", { notes: "N", title: "T2" });
  const queue = (await stored()).queue;
  assert.equal(queue.length, 1);
  assert.deepEqual(queue[0]!.kind === "put" && queue[0]!.fields, {
    url: "https://a.test/",
    clientSavedAt: "2026-01-01T00:00:00.000Z",
    title: "T2",
    notes: "N",
  });
  assert.deepEqual(tab.store.queue, queue);
  await tab.sync.run(false);
  assert.equal(server.count("PUT /v1/bookmarks/a"), 1);
  assert.deepEqual([server.bookmark("a")?.title, server.bookmark("a")?.notes], ["T2", "N"]);
  assert.deepEqual((await stored()).queue, []);
});

test("an edit made while its bookmark's PUT is in flight is sent after it, not folded into it", async () => {
  const tab = await signedInTab();
  const gate = deferred();
  const put = server.routes.get("PUT /v1/bookmarks/*")!;
  server.on("PUT /v1/bookmarks/*", async (request) => {
    await gate.promise;
    return put(request);
  });
  await tab.store.put("a", { url: "https://a.test/", title: "1" });
  const running = tab.sync.run(false);
  try {
    await until(() => server.count("PUT /v1/bookmarks/a") === 1);
    await tab.store.put("a", { title: "2" });
    assert.equal(tab.store.queue.length, 2);
  } finally {
    gate.resolve(); // the engine holds the browser's sync lock until its answer
    await running;
  }
  const bodies = server.seen.filter((r) => r.method === "PUT").map((r) => r.body);
  assert.deepEqual(bodies, [{ url: "https://a.test/", title: "1" }, { url: "https://a.test/", title: "2" }]);
  assert.equal(server.bookmark("a")?.title, "2");
  assert.equal(tab.store.get("a")?.title, "2");
  assert.deepEqual((await stored()).queue, []);
});

test("an edit racing the start of a flush is not lost", async () => {
  const tab = await signedInTab();
  await tab.store.put("a", { url: "https://a.test/", title: "1" });
  // The edit folds into the unsent PUT while the engine picks that PUT up to send it.
  const editing = tab.store.put("a", { title: "2" });
  const running = tab.sync.run(false);
  await Promise.all([editing, running]);
  await tab.sync.run(false);
  assert.deepEqual(server.seen.filter((r) => r.method === "PUT").map((r) => r.body), [{ url: "https://a.test/", title: "2" }]);
  assert.equal(server.bookmark("a")?.title, "2");
  assert.equal(tab.store.get("a")?.title, "2");
  assert.deepEqual((await stored()).queue, []);
});

test("an edit folded into a PUT another page of the browser is sending stays queued and is sent", async () => {
  const editing = await signedInTab();
  await editing.store.put("a", { url: "https://a.test/", title: "1" });
  const sending = await openTab(); // another page of the browser, which read the queue from the database
  const gate = deferred();
  const put = server.routes.get("PUT /v1/bookmarks/*")!;
  server.on("PUT /v1/bookmarks/*", async (request) => {
    await gate.promise;
    return put(request);
  });
  const running = sending.sync.run(false);
  try {
    await until(() => server.count("PUT /v1/bookmarks/a") === 1);
    await editing.store.put("a", { title: "2" }); // this page sends nothing: it folds into its unsent tail
    assert.equal(editing.store.queue.length, 1);
  } finally {
    gate.resolve();
    await running;
  }
  assert.deepEqual((await stored()).queue.map((op) => op.kind === "put" && op.fields.title), ["2"], "the folded edit is still queued");
  await editing.store.load(); // what the other page's change message makes it do
  await editing.sync.run(true);
  assert.equal(server.bookmark("a")?.title, "2");
  assert.equal(editing.store.get("a")?.title, "2");
  assert.deepEqual((await stored()).queue, []);
});

test("a delete after an unsent create keeps both, in order; the bookmark ends deleted everywhere", async () => {
  const tab = await signedInTab();
  await tab.store.put("a", { url: "https://a.test/", title: "A" });
  await tab.store.remove(["a"]);
  assert.deepEqual(tab.store.queue.map((op) => op.kind), ["put", "delete"]);
  assert.equal(tab.store.get("a")?.deleted, true);
  assert.deepEqual(tab.store.list(), []);
  await tab.sync.run(true);
  assert.deepEqual(server.calls().filter((c) => c.endsWith("/a")), ["PUT /v1/bookmarks/a", "DELETE /v1/bookmarks/a"]);
  assert.equal(server.bookmark("a"), null);
  assert.deepEqual(tab.store.list(), []);
  assert.equal(tab.store.get("a")?.deleted, true);
  // Put back (undo): a PUT after the delete brings it back on the server too.
  await tab.store.put("a", { url: "https://a.test/", title: "A again" });
  await tab.sync.run(true);
  assert.equal(server.bookmark("a")?.title, "A again");
  assert.deepEqual(tab.store.list().map((b) => b.title), ["A again"]);
});

test("interleaved edits of two bookmarks keep their order; after a reload the stored tail still folds", async () => {
  const tab = await signedInTab();
  await tab.store.put("a", { url: "https://a.test/", title: "A1" });
  await tab.store.put("b", { url: "https://b.test/", title: "B1" });
  await tab.store.put("a", { title: "A2" });
  await tab.store.putHighlight("h1", { bookmarkId: "a", quote: "q", start: 0, end: 1 });
  await tab.store.putHighlight("h1", { bookmarkId: "a", quote: "q", note: "n" });
  await tab.store.deleteHighlight("h1");
  assert.deepEqual(tab.store.queue.map((op) => `${op.kind} ${op.id}`), ["put a", "put b", "put a", "highlight-put h1", "highlight-delete h1"]);
  tab.db.close();

  const reloaded = await openTab();
  await reloaded.store.putHighlight("h2", { bookmarkId: "b", quote: "r" });
  await reloaded.store.putHighlight("h2", { bookmarkId: "b", quote: "r", color: "blue" });
  const queue = (await stored()).queue;
  assert.deepEqual(queue.map((op) => op.seq), [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(queue[5]!.kind === "highlight-put" && queue[5]!.fields, { bookmarkId: "b", quote: "r", color: "blue" });
  await reloaded.sync.run(true);
  assert.deepEqual(server.calls().filter((c) => !c.includes("delta") && !c.includes("auth")), [
    "PUT /v1/bookmarks/a",
    "PUT /v1/bookmarks/b",
    "PUT /v1/bookmarks/a",
    "PUT /v1/highlights/h1",
    "DELETE /v1/highlights/h1",
    "PUT /v1/highlights/h2",
  ]);
  assert.deepEqual([server.bookmark("a")?.title, server.bookmark("b")?.title, server.highlight("h1"), server.highlight("h2")?.color], ["A2", "B1", null, "blue"]);
  assert.deepEqual(reloaded.store.highlights().map((h) => h.id), ["h2"]);
});

test("a write answered after the engine stopped and the device joined another library leaves no trace in it", async () => {
  const tab = await signedInTab();
  await tab.store.put("old", { url: "https://old.test/", title: "Old library" });
  const gate = deferred();
  const put = server.routes.get("PUT /v1/bookmarks/*")!;
  server.on("PUT /v1/bookmarks/*", async (request) => {
    await gate.promise;
    return put(request);
  });
  const running = tab.sync.run(false);
  try {
    await until(() => server.count("PUT /v1/bookmarks/old") === 1);
    // What joining another library does (app.ts): stop the engine, clear the library, start again.
    tab.sync.stop();
    await tab.db.clearLibrary();
    await tab.store.clear();
  } finally {
    gate.resolve();
    await running;
  }
  assert.deepEqual((await stored()).bookmarks, [], "the old library's answer is not stored in the new one");
  assert.equal(tab.store.get("old"), undefined);
  assert.equal(server.count("GET /v1/bookmarks/delta"), 0, "the stopped engine pulls nothing");
  await tab.store.put("new", { url: "https://new.test/" });
  await tab.sync.run(true);
  assert.deepEqual(server.calls().filter((c) => !c.includes("auth")), ["PUT /v1/bookmarks/old"], "nor starts a cycle until a restart");
});

test("a refused write leaves the queue and is reported; a transient failure keeps it first in line", async () => {
  const tab = await signedInTab();
  const put = server.routes.get("PUT /v1/bookmarks/*")!;
  let outage = true;
  server.on("PUT /v1/bookmarks/*", (request) => {
    if (request.path.endsWith("/bad")) return json(400, { code: "invalid-url", message: "Not a URL." });
    return outage ? json(503, { code: "unavailable", message: "Later." }) : put(request);
  });
  await tab.store.put("bad", { url: "nope" });
  await tab.store.put("a", { url: "https://a.test/" });
  await tab.store.put("b", { url: "https://b.test/" });
  await tab.sync.run(false);
  assert.deepEqual(tab.rejected.map((op) => op.id), ["bad"]);
  assert.equal(tab.sync.state, "error");
  assert.deepEqual((await stored()).queue.map((op) => op.id), ["a", "b"]);
  assert.deepEqual(timers.map((t) => t.ms), [10_000], "a retry is planned");
  outage = false;
  await tab.sync.run(true);
  assert.equal(tab.sync.state, "synced");
  assert.deepEqual([...server.bookmarks().keys()].sort(), ["a", "b"]);
  assert.equal(server.count("PUT /v1/bookmarks/a"), 2);
  assert.equal(server.count("PUT /v1/bookmarks/b"), 1, "nothing after the failed write was sent before it");
  assert.deepEqual(tab.store.list().map((b) => b.clientBookmarkId).sort(), ["a", "b"]);
});

test("a refusal answered after the engine stopped leaves the write queued and reports nothing", async () => {
  const tab = await signedInTab();
  await tab.store.put("a", { url: "https://a.test/" });
  const gate = deferred();
  server.on("PUT /v1/bookmarks/*", async () => {
    await gate.promise;
    return json(400, { code: "invalid-url", message: "Not a URL." });
  });
  const running = tab.sync.run(false);
  try {
    await until(() => server.count("PUT /v1/bookmarks/a") === 1);
    tab.sync.stop();
  } finally {
    gate.resolve();
    await running;
  }
  assert.deepEqual(tab.rejected, []);
  assert.deepEqual((await stored()).queue.map((op) => op.id), ["a"]);
  assert.deepEqual(tab.store.queue.map((op) => op.id), ["a"]);
});
