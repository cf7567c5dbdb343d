import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { DB_NAME, Db, UPGRADES, type Upgrade, versionOf } from "../src/db.ts";
import type { LocalBookmark, LocalCollection, LocalHighlight, NewOp, Op } from "../src/model.ts";
import { Store } from "../src/store.ts";
import { FakeServer, browser, openTab, stored } from "./fakes.ts";

const at = "2026-01-01T00:00:00.000Z";

const bookmark = {
  clientBookmarkId: "b1", url: "https://a.test/", normalizedUrl: "https://a.test/", domain: "a.test", title: "Kept",
  description: null, thumbnailUrl: null, summary: null, saveWhy: null, tags: [], enrichmentStatus: "pending",
  snapshotStatus: "pending", lastErrorCode: null, isFavorite: true, collectionIds: ["c1"], userTags: ["x"],
  isArchived: false, notes: "mine", clientSavedAt: at, lastOpenedAt: null, createdAt: at, updatedAt: at, enrichedAt: null,
  deleted: false, deletedAt: null,
} satisfies LocalBookmark;
const collection = { id: "c1", name: "Reading", parentId: null, createdAt: at, updatedAt: at, deleted: false, deletedAt: null } satisfies LocalCollection;
const highlight = {
  id: "h1", bookmarkId: "b1", quote: "the tide", prefix: "", suffix: "", start: 0, end: 8, color: "green", note: "n",
  anchor: "exact", createdAt: at, updatedAt: at, deleted: false, deletedAt: null,
} satisfies LocalHighlight;
const queued = [
  { kind: "put", id: "b2", fields: { url: "https://b.test/", title: "Unsent" }, createdAt: at },
  { kind: "delete", id: "b1", createdAt: at },
] satisfies NewOp[];

function promised<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** A database as an earlier release left it: its schema built by hand (not by our steps), then filled. */
async function legacyDatabase(version: number, schema: (db: IDBDatabase) => void, fill: (tx: IDBTransaction) => void): Promise<void> {
  const request = indexedDB.open(DB_NAME, version);
  request.onupgradeneeded = () => schema(request.result);
  const db = await promised(request);
  const tx = db.transaction([...db.objectStoreNames], "readwrite");
  fill(tx);
  await new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
  });
  db.close();
}

/** The first release's schema (version 1): no highlights store. */
function version1(db: IDBDatabase): void {
  db.createObjectStore("bookmarks", { keyPath: "clientBookmarkId" });
  db.createObjectStore("collections", { keyPath: "id" });
  db.createObjectStore("queue", { keyPath: "seq", autoIncrement: true });
  db.createObjectStore("meta");
}

function fillVersion1(tx: IDBTransaction): void {
  tx.objectStore("bookmarks").put(bookmark);
  tx.objectStore("collections").put(collection);
  for (const op of queued) tx.objectStore("queue").add(op);
  tx.objectStore("meta").put("pos-7", "cursor");
  tx.objectStore("meta").put({ refreshToken: "refresh-1", user: { id: "user-1", isAnonymous: true } }, "session");
}

async function schemaOf(name = DB_NAME): Promise<{ version: number; stores: Record<string, unknown> }> {
  const db = await promised(indexedDB.open(name));
  const stores: Record<string, unknown> = {};
  const names = [...db.objectStoreNames];
  if (names.length) {
    const tx = db.transaction(names, "readonly");
    for (const n of names) {
      const s = tx.objectStore(n);
      stores[n] = { keyPath: s.keyPath, autoIncrement: s.autoIncrement, indexes: [...s.indexNames] };
    }
  }
  const version = db.version;
  db.close();
  return { version, stores };
}

beforeEach(() => browser(new FakeServer()));

test("a fresh install gets the five stores at version 2", async () => {
  (await Db.open()).close();
  assert.deepEqual(await schemaOf(), {
    version: 2,
    stores: {
      bookmarks: { keyPath: "clientBookmarkId", autoIncrement: false, indexes: [] },
      collections: { keyPath: "id", autoIncrement: false, indexes: [] },
      highlights: { keyPath: "id", autoIncrement: false, indexes: [] },
      meta: { keyPath: null, autoIncrement: false, indexes: [] },
      queue: { keyPath: "seq", autoIncrement: true, indexes: [] },
    },
  });
  assert.equal(versionOf(UPGRADES), 2);
});

test("a version-1 database opened by this build keeps every record, queued write, cursor and session", async () => {
  await legacyDatabase(1, version1, fillVersion1);
  const tab = await openTab();
  assert.equal((await schemaOf()).version, 2);
  const kept = await stored();
  assert.deepEqual(kept.bookmarks, [bookmark]);
  assert.deepEqual(kept.collections, [collection]);
  assert.deepEqual(kept.highlights, []);
  assert.deepEqual(kept.queue, queued.map((op, i) => ({ ...op, seq: i + 1 })));
  assert.equal(kept.cursor, "pos-7");
  assert.equal(tab.session.user?.id, "user-1");
  // The new store works, and the queue's numbering goes on after the old writes (no seq is reused).
  await tab.store.putHighlight("h9", { bookmarkId: "b2", quote: "q" });
  assert.deepEqual(tab.store.queue.map((op) => op.seq), [1, 2, 3]);
  assert.equal(tab.store.get("b2")?.title, "Unsent");
  assert.equal(tab.store.get("b1")?.deleted, true);
  tab.db.close();
});

test("upgrade steps run in order, once, inside the upgrade, and keep the data of every store", async () => {
  // A database of the current schema (version 2) with data in all five stores.
  await legacyDatabase(2, (db) => {
    version1(db);
    db.createObjectStore("highlights", { keyPath: "id" });
  }, (tx) => {
    fillVersion1(tx);
    tx.objectStore("highlights").put(highlight);
  });
  const ran: number[] = [];
  const steps: Upgrade[] = [
    ...UPGRADES.map((step) => ({ version: step.version, apply: (db: IDBDatabase, tx: IDBTransaction) => (ran.push(step.version), step.apply(db, tx)) })),
    { version: 3, apply: (_db, tx) => (ran.push(3), tx.objectStore("bookmarks").createIndex("byUrl", "normalizedUrl")) },
    { version: 5, apply: (_db, tx) => (ran.push(5), tx.objectStore("highlights").createIndex("byBookmark", "bookmarkId")) },
  ];
  const db = await Db.open(DB_NAME, steps);
  assert.deepEqual(ran, [3, 5], "only the steps newer than the database's version, in order");
  const store = new Store(db);
  await store.load();
  assert.deepEqual(await db.all("bookmarks"), [bookmark]);
  assert.deepEqual(await db.all("collections"), [collection]);
  assert.deepEqual(await db.all("highlights"), [highlight]);
  assert.deepEqual((await db.all<Op>("queue")).map((op) => op.seq), [1, 2]);
  assert.equal(await db.getMeta("cursor"), "pos-7");
  assert.deepEqual(store.highlight("h1")?.note, "n");
  db.close();
  const schema = await schemaOf();
  assert.equal(schema.version, 5);
  assert.deepEqual((schema.stores.bookmarks as { indexes: string[] }).indexes, ["byUrl"]);
  (await Db.open(DB_NAME, steps)).close();
  assert.deepEqual(ran, [3, 5], "an up-to-date database runs no step");
});

test("a fresh install runs every step; a list out of order is refused before anything is opened", async () => {
  const ran: number[] = [];
  const steps: Upgrade[] = UPGRADES.map((step) => ({ version: step.version, apply: (db, tx) => (ran.push(step.version), step.apply(db, tx)) }));
  (await Db.open("other", steps)).close();
  assert.deepEqual(ran, [1, 2]);
  await assert.rejects(Db.open("unordered", [UPGRADES[1]!, UPGRADES[0]!]), /out of order/);
  assert.deepEqual((await indexedDB.databases()).map((d) => d.name).sort(), ["other"]);
});
