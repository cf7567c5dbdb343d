import assert from "node:assert/strict";
import { test } from "node:test";
import type { Db, Records } from "../src/db.ts";
import { highlightAfterSent, materializeHighlight, skeleton } from "../src/merge.ts";
import type { DeltaPage, Highlight, LocalHighlight, Op } from "../src/model.ts";
import type { SessionManager } from "../src/session.ts";
import { Store } from "../src/store.ts";
import { SyncEngine } from "../src/sync.ts";

const at = "2026-01-01T00:00:00.000Z";

function serverHighlight(patch: Partial<Highlight> = {}): Highlight {
  return {
    id: "h1",
    bookmarkId: "b1",
    quote: "the tide returns",
    prefix: "until ",
    suffix: " and",
    start: 10,
    end: 26,
    color: "yellow",
    note: "",
    anchor: "exact",
    createdAt: at,
    updatedAt: at,
    ...patch,
  };
}

/** IndexedDB's part the store uses, in memory. */
class MemoryDb {
  stores: Record<string, Map<string | number, unknown>> = { bookmarks: new Map(), collections: new Map(), highlights: new Map(), queue: new Map() };
  meta = new Map<string, unknown>();
  private seq = 0;
  async all<T>(name: string): Promise<T[]> {
    return [...(this.stores[name]?.values() ?? [])] as T[];
  }
  async enqueue(ops: Omit<Op, "seq">[]): Promise<Op[]> {
    return ops.map((op) => {
      const stored = { ...op, seq: ++this.seq } as Op;
      this.stores.queue!.set(stored.seq, stored);
      return stored;
    });
  }
  async replaceOp(op: Op): Promise<void> {
    this.stores.queue!.set(op.seq, op);
  }
  private put(records: Records): void {
    for (const b of records.bookmarks ?? []) this.stores.bookmarks!.set(b.clientBookmarkId, b);
    for (const c of records.collections ?? []) this.stores.collections!.set(c.id, c);
    for (const h of records.highlights ?? []) this.stores.highlights!.set(h.id, h);
  }
  async completeOp(seq: number, records: Records = {}): Promise<void> {
    this.stores.queue!.delete(seq);
    this.put(records);
  }
  async applyPage(records: Records, cursor: string | null): Promise<void> {
    this.put(records);
    this.meta.set("cursor", cursor);
  }
  async getMeta<T>(key: string): Promise<T | undefined> {
    return this.meta.get(key) as T | undefined;
  }
}

function newStore(): { db: MemoryDb; store: Store } {
  (globalThis as { BroadcastChannel?: unknown }).BroadcastChannel = undefined;
  const db = new MemoryDb();
  return { db, store: new Store(db as unknown as Db) };
}

function page(patch: Partial<DeltaPage>): DeltaPage {
  return { cursor: null, nextCursor: null, upserts: [], tombstones: [], collections: [], collectionTombstones: [], highlights: [], highlightTombstones: [], ...patch };
}

test("a queued highlight shows at once; only its color and note change afterwards", () => {
  const ops: Op[] = [
    { seq: 1, kind: "highlight-put", id: "h1", fields: { bookmarkId: "b1", quote: "q", prefix: "p", suffix: "s", start: 1, end: 2 }, createdAt: at },
    { seq: 2, kind: "highlight-put", id: "h1", fields: { bookmarkId: "b1", quote: "q", color: "blue", note: "mine" }, createdAt: at },
  ];
  const view = materializeHighlight(undefined, ops)!;
  assert.deepEqual([view.quote, view.prefix, view.start, view.color, view.note, view.deleted], ["q", "p", 1, "blue", "mine", false]);
  const server = serverHighlight();
  const edit: Op = { seq: 2, kind: "highlight-put", id: "h1", fields: { bookmarkId: "b1", quote: "other", color: "blue" }, createdAt: at };
  const edited = materializeHighlight(server, [edit])!;
  assert.equal(edited.quote, server.quote);
  assert.equal(edited.color, "blue");
  assert.equal(materializeHighlight(server, [{ seq: 3, kind: "highlight-delete", id: "h1", createdAt: at }])?.deleted, true);
  assert.equal(highlightAfterSent(server, ops[1]!, serverHighlight({ note: "mine" }))?.note, "mine");
});

test("the store lists highlights of live bookmarks, newest first, and merges unsent edits of one", async () => {
  const { db, store } = newStore();
  await store.put("b1", { url: "https://a.test/", title: "A" });
  await store.putHighlight("h1", { bookmarkId: "b1", quote: "first", start: 0, end: 5 });
  await store.putHighlight("h1", { bookmarkId: "b1", quote: "first", note: "a" });
  await store.putHighlight("h1", { bookmarkId: "b1", quote: "first", note: "ab", color: "green" });
  assert.equal(store.queue.length, 2, "the edits joined the unsent create");
  assert.deepEqual(db.stores.queue!.get(2), {
    seq: 2,
    kind: "highlight-put",
    id: "h1",
    fields: { bookmarkId: "b1", quote: "first", start: 0, end: 5, note: "ab", color: "green" },
    createdAt: (db.stores.queue!.get(2) as Op).createdAt,
  });
  await new Promise((r) => setTimeout(r, 5));
  await store.putHighlight("h2", { bookmarkId: "b1", quote: "second" });
  assert.deepEqual(store.highlights().map((h) => h.id), ["h2", "h1"]);
  assert.deepEqual(store.highlightsOf("b1").map((h) => h.note), ["", "ab"]);
  assert.equal(store.get("h1"), undefined, "highlight ids are not bookmarks");
  assert.deepEqual([...store.pendingIds()], ["b1"]);
  await store.remove(["b1"]);
  assert.deepEqual(store.highlights(), [], "a deleted bookmark's highlights are hidden");
});

test("delta pages bring highlights and their tombstones; an older copy never replaces a newer one", async () => {
  const { store } = newStore();
  const server = { ownerUid: "u1", normalizedUrl: "https://a.test/", domain: "a.test", canonicalUrl: null, linkStatus: null, linkCheckedAt: null, linkMovedTo: null };
  await store.applyPage(page({ upserts: [{ ...skeleton("b1", at), url: "https://a.test/", ...server }] }), "c1");
  await store.applyPage(page({ highlights: [serverHighlight({ updatedAt: "2026-01-02T00:00:00Z", note: "new" })] }), "c2");
  await store.applyPage(page({ highlights: [serverHighlight({ note: "old" })] }), "c3");
  assert.equal(store.highlight("h1")?.note, "new");
  await store.applyPage(page({ highlightTombstones: [{ id: "h1", deletedAt: "2026-01-03T00:00:00Z" }, { id: "unknown", deletedAt: at }] }), "c4");
  assert.deepEqual(store.highlights(), []);
  assert.equal(store.highlight("h1")?.deleted, true);
});

test("sync sends a bookmark's PUT before its highlight's, then the highlight's change and delete", async () => {
  const { store } = newStore();
  const calls: string[] = [];
  const bodies: unknown[] = [];
  const g = globalThis as Record<string, unknown>;
  Object.defineProperty(globalThis, "navigator", { value: { onLine: true }, configurable: true });
  g.window = { setTimeout, clearTimeout, addEventListener() {} };
  g.fetch = async (path: string, init: RequestInit) => {
    const method = init.method ?? "GET";
    calls.push(`${method} ${path.split("?")[0]}`);
    if (init.body) bodies.push(JSON.parse(String(init.body)));
    if (path.startsWith("/v1/bookmarks/delta")) return Response.json({ data: page({}) });
    if (path.startsWith("/v1/bookmarks/")) return Response.json({ data: { ...skeleton("b1", at), url: "https://a.test/", updatedAt: at } });
    if (method === "DELETE") return new Response(null, { status: 204 });
    const body = JSON.parse(String(init.body)) as Partial<Highlight>;
    return Response.json({ data: serverHighlight({ quote: body.quote, note: body.note ?? "", color: body.color ?? "yellow", start: body.start ?? null, end: body.end ?? null }) });
  };
  const session = { token: async () => "token", refresh: async () => "token" } as unknown as SessionManager;
  const engine = new SyncEngine(null as unknown as Db, store, session);
  (engine as unknown as { pull: () => Promise<void> }).pull = async () => {
    calls.push("pull");
  };
  await store.put("b1", { url: "https://a.test/" });
  await store.putHighlight("h1", { bookmarkId: "b1", quote: "the tide returns", prefix: "until ", suffix: " and", start: 10, end: 26 });
  await engine.run(false);
  assert.deepEqual(calls, ["PUT /v1/bookmarks/b1", "PUT /v1/highlights/h1", "pull"]);
  assert.deepEqual(bodies[1], { bookmarkId: "b1", quote: "the tide returns", prefix: "until ", suffix: " and", start: 10, end: 26 });
  assert.equal(store.queue.length, 0);
  assert.equal(store.highlight("h1")?.anchor, "exact");
  calls.length = 0;
  await store.putHighlight("h1", { bookmarkId: "b1", quote: "the tide returns", color: "pink" });
  await store.deleteHighlight("h1");
  await engine.run(false);
  assert.deepEqual(calls, ["PUT /v1/highlights/h1", "DELETE /v1/highlights/h1", "pull"]);
  assert.deepEqual(bodies[2], { bookmarkId: "b1", quote: "the tide returns", color: "pink" });
  assert.equal(store.highlight("h1")?.deleted, true);
  const kept: LocalHighlight[] = store.highlights();
  assert.deepEqual(kept, []);
});
