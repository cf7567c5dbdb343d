// IndexedDB, the device's copy of the library: the server's records (bookmarks, collections, highlights), the
// queue of writes not yet sent (ordered by seq), and meta (the sync cursor, the refresh token).

import type { QueueStorage } from "../../clients/shared/queue.ts";
import type { LocalBookmark, LocalCollection, LocalHighlight, Op } from "./model.ts";

export const DB_NAME = "bookmarks";
type StoreName = "bookmarks" | "collections" | "highlights" | "queue" | "meta";

/** The server's copies one answer or one delta page brings. */
export interface Records {
  bookmarks?: LocalBookmark[];
  collections?: LocalCollection[];
  highlights?: LocalHighlight[];
}
/** Meta entries that belong to one library (the sync cursor, links awaiting a preview or enrichment, the
 * account's AI setting and enrichment pause): they leave with it. */
const LIBRARY_META = ["cursor", "previews", "autoEnrich", "autoEnrichPause", "useAi"];

function promised<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction aborted"));
  });
}

/** A value as text with its objects' keys in order: equal for equal ops, whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function putRecords(tx: IDBTransaction, records: Records): void {
  for (const record of records.bookmarks ?? []) tx.objectStore("bookmarks").put(record);
  for (const record of records.collections ?? []) tx.objectStore("collections").put(record);
  for (const record of records.highlights ?? []) tx.objectStore("highlights").put(record);
}

/**
 * One step of the schema: what ``version`` changes in the one before it. A database runs, in order and
 * inside its upgrade transaction, every step newer than its own version; a fresh one runs them all. A
 * step is never edited once released: a change of schema is a new step with the next version.
 */
export interface Upgrade {
  version: number;
  apply(db: IDBDatabase, tx: IDBTransaction): void;
}

export const UPGRADES: readonly Upgrade[] = [
  {
    version: 1,
    apply(db) {
      db.createObjectStore("bookmarks", { keyPath: "clientBookmarkId" });
      db.createObjectStore("collections", { keyPath: "id" });
      db.createObjectStore("queue", { keyPath: "seq", autoIncrement: true });
      db.createObjectStore("meta");
    },
  },
  {
    version: 2,
    apply(db) {
      db.createObjectStore("highlights", { keyPath: "id" });
    },
  },
];

/** The version a list of steps leads to (its last); refuses a list out of order. */
export function versionOf(upgrades: readonly Upgrade[]): number {
  let version = 0;
  for (const step of upgrades) {
    if (!Number.isInteger(step.version) || step.version <= version) {
      throw new Error(`IndexedDB upgrade steps out of order at version ${step.version}`);
    }
    version = step.version;
  }
  return version;
}

export class Db {
  private readonly db: IDBDatabase;

  private constructor(db: IDBDatabase) {
    this.db = db;
  }

  /** ``upgrades``: the schema's steps (tests give their own list to exercise the mechanism). */
  static open(name = DB_NAME, upgrades: readonly Upgrade[] = UPGRADES): Promise<Db> {
    let version: number;
    try {
      version = versionOf(upgrades);
    } catch (error) {
      return Promise.reject(error);
    }
    const request = indexedDB.open(name, version);
    request.onupgradeneeded = (event) => {
      const tx = request.transaction;
      if (!tx) throw new Error("IndexedDB upgrade without its transaction");
      for (const step of upgrades) if (step.version > event.oldVersion) step.apply(request.result, tx);
    };
    return promised(request).then((db) => {
      // A newer build of the app (another tab) needs a newer database: this copy gives way (a page
      // reloads into that build; the service worker only closes it).
      db.onversionchange = () => {
        db.close();
        if (typeof window !== "undefined") window.location.reload();
      };
      return new Db(db);
    });
  }

  close(): void {
    this.db.close();
  }

  async all<T>(store: StoreName): Promise<T[]> {
    const tx = this.db.transaction(store, "readonly");
    return promised(tx.objectStore(store).getAll() as IDBRequest<T[]>);
  }

  async getMeta<T>(key: string): Promise<T | undefined> {
    const tx = this.db.transaction("meta", "readonly");
    return promised(tx.objectStore("meta").get(key) as IDBRequest<T | undefined>);
  }

  async setMeta(key: string, value: unknown): Promise<void> {
    const tx = this.db.transaction("meta", "readwrite");
    tx.objectStore("meta").put(value, key);
    await done(tx);
  }

  async deleteMeta(key: string): Promise<void> {
    const tx = this.db.transaction("meta", "readwrite");
    tx.objectStore("meta").delete(key);
    await done(tx);
  }

  /** Appends operations to the queue in one transaction; returns them with their sequence numbers. */
  async enqueue(ops: Omit<Op, "seq">[]): Promise<Op[]> {
    const tx = this.db.transaction("queue", "readwrite");
    const store = tx.objectStore("queue");
    const keys = ops.map((op) => promised(store.add(op)));
    await done(tx);
    const seqs = await Promise.all(keys);
    return ops.map((op, i) => ({ ...op, seq: Number(seqs[i]) }) as Op);
  }

  async replaceOp(op: Op): Promise<void> {
    const tx = this.db.transaction("queue", "readwrite");
    tx.objectStore("queue").put(op);
    await done(tx);
  }

  /**
   * The server accepted (or refused) ``seq``: drop it and store the record's new base together. With
   * ``sent`` (the op as it was sent), an op changed since (another page of the browser folded an edit
   * into it meanwhile) stays queued, to be sent as it is now.
   */
  async completeOp(seq: number, records: Records = {}, sent?: Op): Promise<void> {
    const tx = this.db.transaction(["queue", "bookmarks", "collections", "highlights"], "readwrite");
    const queue = tx.objectStore("queue");
    if (sent) {
      const current = queue.get(seq) as IDBRequest<Op | undefined>;
      current.onsuccess = () => {
        if (current.result && canonical(current.result) !== canonical(sent)) return;
        queue.delete(seq);
      };
    } else {
      queue.delete(seq);
    }
    putRecords(tx, records);
    await done(tx);
  }

  /** One delta page, applied with the cursor it leads to, all or nothing. */
  async applyPage(records: Records, cursor: string | null): Promise<void> {
    const tx = this.db.transaction(["bookmarks", "collections", "highlights", "meta"], "readwrite");
    putRecords(tx, records);
    tx.objectStore("meta").put(cursor, "cursor");
    await done(tx);
  }

  async clearAll(): Promise<void> {
    const stores: StoreName[] = ["bookmarks", "collections", "highlights", "queue", "meta"];
    const tx = this.db.transaction(stores, "readwrite");
    for (const name of stores) tx.objectStore(name).clear();
    await done(tx);
  }

  /** Everything but the session: used when this device joins another library. */
  async clearLibrary(): Promise<void> {
    const stores: StoreName[] = ["bookmarks", "collections", "highlights", "queue"];
    const tx = this.db.transaction([...stores, "meta"], "readwrite");
    for (const name of stores) tx.objectStore(name).clear();
    for (const key of LIBRARY_META) tx.objectStore("meta").delete(key);
    await done(tx);
  }
}

/** The `queue` store as the client core's write queue keeps it (clients/shared/queue.ts). */
export function queueStorage(db: Pick<Db, "all" | "enqueue" | "replaceOp" | "completeOp">): QueueStorage<Op> {
  return {
    load: () => db.all<Op>("queue"),
    append: (ops) => db.enqueue(ops),
    replace: (op) => db.replaceOp(op),
    forget: (sent) => db.completeOp(sent.seq, {}, sent),
  };
}
