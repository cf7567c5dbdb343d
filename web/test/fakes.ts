/** A scripted stand-in for the server's HTTP API as the web app's sync engine sees it through fetch, and
 * the browser around it (an in-memory IndexedDB, Web Locks, timers that only run when a test says so).
 * The real server is exercised by the end-to-end tests in tests/e2e/web. */

import { IDBFactory, IDBObjectStore } from "fake-indexeddb";
import { Db } from "../src/db.ts";
import type { Bookmark } from "../../clients/shared/model.ts"; // the server's records are whole wire bookmarks
import type { Collection, DeltaPage, Highlight, Op, Session } from "../src/model.ts";
import { SessionManager } from "../src/session.ts";
import { Store } from "../src/store.ts";
import { SyncEngine } from "../src/sync.ts";
import { ScriptedServer, type Seen, json } from "../../clients/shared/test/scriptedServer.ts";

export { json, type Seen } from "../../clients/shared/test/scriptedServer.ts";

/** A promise a test settles by hand: a server answer held until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

type Family = "bookmark" | "collection" | "highlight";
interface Entry {
  family: Family;
  id: string;
  pos: number;
  record: Bookmark | Collection | Highlight | null; // null: a tombstone
  deletedAt: string | null;
}

const EPOCH = Date.parse("2026-01-01T00:00:00.000Z");

/**
 * The server's library of one user: every write (ours or another device's) takes the next position of
 * one stream, its ``updatedAt`` is that position's time, and delta pages list the newest change of each
 * record after the cursor's position, in stream order, as the API guide's section 4 says.
 */
export class FakeServer extends ScriptedServer {
  /** At most this many records a page, whatever the request's limit (a small number makes several pages). */
  pageSize = 1000;
  private clock = 0;
  private readonly entries = new Map<string, Entry>();
  /** Refresh tokens are single-use: a reuse revokes the family (every token issued), as the real server does. */
  private readonly spent = new Set<string>();
  private readonly live = new Set<string>();
  private issued = 0;
  revoked = false;

  constructor() {
    super("http://app.test");
    this.routes.set("POST /v1/auth/anonymous", () => json(200, this.pair()));
    this.routes.set("POST /v1/auth/refresh", (request) => {
      const token = (request.body as { refreshToken: string }).refreshToken;
      if (this.revoked || this.spent.has(token) || !token.startsWith("refresh-")) {
        if (this.spent.has(token)) this.revokeFamily();
        return json(401, { code: "invalid-refresh-token", message: "Sign in again." });
      }
      this.spent.add(token);
      return json(200, this.pair());
    });
    this.routes.set("POST /v1/auth/logout", () => json(204, null));
    this.routes.set("GET /v1/bookmarks/delta", (request) => this.delta(request));
    for (const family of ["bookmark", "collection", "highlight"] as const) {
      this.routes.set(`PUT /v1/${family}s/*`, (request) => this.put(family, request));
      this.routes.set(`DELETE /v1/${family}s/*`, (request) => this.remove(family, request));
    }
  }

  pair(): Session {
    this.issued += 1;
    const session = {
      accessToken: `access-${this.issued}`,
      refreshToken: `refresh-${this.issued}`,
      user: { id: "user-1", isAnonymous: true, displayName: null, email: null, photoUrl: null, isPro: false },
    };
    this.live.add(session.accessToken);
    return session;
  }

  /** Access tokens expire: the next request with one is 401 until a refresh. */
  expireAccessTokens(): void {
    this.live.clear();
  }

  private revokeFamily(): void {
    this.revoked = true;
    this.live.clear();
  }

  /** The requests made, as "METHOD /path" without the query. */
  calls(): string[] {
    return this.seen.map((r) => `${r.method} ${r.path.split("?")[0]}`);
  }

  private tick(): { pos: number; at: string } {
    this.clock += 1;
    return { pos: this.clock, at: new Date(EPOCH + this.clock * 1000).toISOString() };
  }

  // -- the library ---------------------------------------------------------------------------------

  bookmark(id: string): Bookmark | null {
    return (this.entries.get(`bookmark:${id}`)?.record as Bookmark | undefined) ?? null;
  }

  highlight(id: string): Highlight | null {
    return (this.entries.get(`highlight:${id}`)?.record as Highlight | undefined) ?? null;
  }

  collection(id: string): Collection | null {
    return (this.entries.get(`collection:${id}`)?.record as Collection | undefined) ?? null;
  }

  /** Live bookmarks, by id. */
  bookmarks(): Map<string, Bookmark> {
    const out = new Map<string, Bookmark>();
    for (const e of this.entries.values()) if (e.family === "bookmark" && e.record) out.set(e.id, e.record as Bookmark);
    return out;
  }

  /** A write of the bookmark, as from this device's PUT or another device's. */
  saveBookmark(id: string, fields: Record<string, unknown>): Bookmark {
    const { pos, at } = this.tick();
    const previous = this.bookmark(id);
    const url = String(fields.url ?? previous?.url ?? "");
    const record: Bookmark = {
      clientBookmarkId: id,
      url,
      normalizedUrl: url.toLowerCase(),
      domain: new URL(url).hostname,
      title: null,
      description: null,
      thumbnailUrl: null,
      summary: null,
      saveWhy: null,
      tags: [],
      enrichmentStatus: "pending",
      snapshotStatus: "pending",
      lastErrorCode: null,
      isFavorite: false,
      collectionIds: [],
      userTags: [],
      isArchived: false,
      notes: null,
      clientSavedAt: null,
      lastOpenedAt: null,
      enrichedAt: null,
      linkStatus: null,
      linkCheckedAt: null,
      linkMovedTo: null,
      ...(previous ?? {}),
      ...fields,
      createdAt: previous?.createdAt ?? at,
      updatedAt: at,
    } as Bookmark;
    this.entries.set(`bookmark:${id}`, { family: "bookmark", id, pos, record, deletedAt: null });
    return record;
  }

  saveCollection(id: string, fields: Record<string, unknown>): Collection {
    const { pos, at } = this.tick();
    const previous = this.collection(id);
    const record: Collection = {
      id,
      name: "",
      parentId: null,
      ...(previous ?? {}),
      ...fields,
      createdAt: previous?.createdAt ?? at,
      updatedAt: at,
    } as Collection;
    this.entries.set(`collection:${id}`, { family: "collection", id, pos, record, deletedAt: null });
    return record;
  }

  saveHighlight(id: string, fields: Record<string, unknown>): Highlight {
    const { pos, at } = this.tick();
    const previous = this.highlight(id);
    const created = previous
      ? { ...previous, color: fields.color ?? previous.color, note: fields.note ?? previous.note }
      : {
          id, bookmarkId: "", quote: "", prefix: "", suffix: "", start: null, end: null, color: "yellow", note: "",
          anchor: "exact", ...fields,
        };
    const record = { ...created, createdAt: previous?.createdAt ?? at, updatedAt: at } as Highlight;
    this.entries.set(`highlight:${id}`, { family: "highlight", id, pos, record, deletedAt: null });
    return record;
  }

  /** A delete: an unknown id still leaves a tombstone, as the server does. */
  deleteRecord(family: Family, id: string): void {
    const { pos, at } = this.tick();
    this.entries.set(`${family}:${id}`, { family, id, pos, record: null, deletedAt: at });
  }

  // -- routes ---------------------------------------------------------------------------------------

  private authorized(request: Seen): boolean {
    return !!request.auth && this.live.has(request.auth.replace(/^Bearer /, ""));
  }

  private unauthorized(): Response {
    return json(401, { code: "unauthorized", message: "Sign in again." });
  }

  private idOf(request: Seen): string {
    return decodeURIComponent(request.path.split("?")[0]!.split("/").pop()!);
  }

  private put(family: Family, request: Seen): Response {
    if (!this.authorized(request)) return this.unauthorized();
    const id = this.idOf(request);
    const fields = request.body as Record<string, unknown>;
    if (family === "bookmark") {
      if (typeof fields.url !== "string") return json(400, { code: "invalid-request", message: "url is required." });
      return json(200, { data: this.saveBookmark(id, fields) });
    }
    if (family === "collection") return json(200, { data: this.saveCollection(id, fields) });
    return json(200, { data: this.saveHighlight(id, fields) });
  }

  private remove(family: Family, request: Seen): Response {
    if (!this.authorized(request)) return this.unauthorized();
    this.deleteRecord(family, this.idOf(request));
    return json(204, null);
  }

  private delta(request: Seen): Response {
    if (!this.authorized(request)) return this.unauthorized();
    const params = new URL(request.path, "http://app.test").searchParams;
    const cursor = params.get("cursor");
    if (cursor !== null && !/^pos-\d+$/.test(cursor)) return json(400, { code: "invalid-cursor", message: "Bad cursor." });
    const after = cursor ? Number(cursor.slice(4)) : 0;
    const limit = Math.min(Number(params.get("limit") ?? 200), this.pageSize);
    const newer = [...this.entries.values()].filter((e) => e.pos > after).sort((a, b) => a.pos - b.pos);
    const taken = newer.slice(0, limit);
    const page: DeltaPage = {
      cursor,
      nextCursor: newer.length > taken.length ? `pos-${taken[taken.length - 1]!.pos}` : null,
      upserts: [],
      tombstones: [],
      collections: [],
      collectionTombstones: [],
      highlights: [],
      highlightTombstones: [],
    };
    for (const e of taken) {
      if (e.family === "bookmark") {
        if (e.record) page.upserts.push(e.record as Bookmark);
        else page.tombstones.push({ clientBookmarkId: e.id, deletedAt: e.deletedAt! });
      } else if (e.family === "collection") {
        if (e.record) page.collections.push(e.record as Collection);
        else page.collectionTombstones.push({ id: e.id, deletedAt: e.deletedAt! });
      } else if (e.record) page.highlights!.push(e.record as Highlight);
      else page.highlightTombstones!.push({ id: e.id, deletedAt: e.deletedAt! });
    }
    return json(200, { data: page });
  }
}

// -- the browser ------------------------------------------------------------------------------------

/** Timers the engine sets (retries): kept, never run by themselves. */
export const timers: { ms: number; run: () => void }[] = [];
const webLocks = (globalThis.navigator as Navigator & { locks: LockManager }).locks;

/** A fresh browser profile: an empty IndexedDB, online, one lock manager, ``server`` behind fetch. */
export function browser(server: FakeServer): void {
  const g = globalThis as Record<string, unknown>;
  g.indexedDB = new IDBFactory();
  Object.defineProperty(globalThis, "navigator", { value: { onLine: true, locks: webLocks }, configurable: true });
  g.window = {
    setTimeout: (run: () => void, ms: number) => timers.push({ ms, run }),
    clearTimeout: () => {},
    addEventListener() {},
  };
  g.BroadcastChannel = undefined; // one tab at a time talks to the database in these tests
  g.fetch = server.fetch;
  timers.length = 0;
}

/** One page of the app: its database connection, session, store and sync engine, loaded as at start. */
export interface Tab {
  db: Db;
  session: SessionManager;
  store: Store;
  sync: SyncEngine;
  signedOut: number;
  rejected: Op[];
}

export async function openTab(name?: string): Promise<Tab> {
  const db = await Db.open(name);
  const session = new SessionManager(db);
  const store = new Store(db);
  await Promise.all([session.load(), store.load()]);
  const sync = new SyncEngine(db, store, session);
  const tab: Tab = { db, session, store, sync, signedOut: 0, rejected: [] };
  sync.onSignedOut = () => {
    tab.signedOut += 1;
  };
  sync.onRejected = (op) => tab.rejected.push(op);
  return tab;
}

/** A first visit: a new anonymous account on ``server``. */
export async function signedInTab(): Promise<Tab> {
  const tab = await openTab();
  await tab.session.startAnonymous();
  return tab;
}

/** What the device holds in IndexedDB, read with a connection of its own. */
export async function stored(name?: string): Promise<{
  bookmarks: Bookmark[];
  collections: Collection[];
  highlights: Highlight[];
  queue: Op[];
  cursor: string | null | undefined;
}> {
  const db = await Db.open(name);
  try {
    const [bookmarks, collections, highlights, queue, cursor] = await Promise.all([
      db.all<Bookmark>("bookmarks"),
      db.all<Collection>("collections"),
      db.all<Highlight>("highlights"),
      db.all<Op>("queue"),
      db.getMeta<string | null>("cursor"),
    ]);
    return { bookmarks, collections, highlights, queue, cursor };
  } finally {
    db.close();
  }
}

/**
 * The page dies in the middle of an IndexedDB transaction: at the first write that ``where`` picks, the
 * transaction is aborted, so none of its writes land (what a closed tab or a killed browser leaves).
 * Returns a function telling whether it happened; the hook goes away after one crash or at ``undo``.
 */
export function crashAt(where: (store: string, value: unknown, key: unknown) => boolean): { crashed: () => boolean; undo: () => void } {
  const proto = IDBObjectStore.prototype as unknown as Record<"put" | "delete", (this: IDBObjectStore, ...args: unknown[]) => IDBRequest>;
  const put = proto.put;
  const remove = proto.delete;
  let crashed = false;
  const undo = (): void => {
    proto.put = put;
    proto.delete = remove;
  };
  const hook = (original: typeof put, valueFirst: boolean) =>
    function (this: IDBObjectStore, ...args: unknown[]): IDBRequest {
      const [value, key] = valueFirst ? [args[0], args[1]] : [undefined, args[0]];
      if (!crashed && where(this.name, value, key)) {
        crashed = true;
        undo();
        this.transaction.abort();
        return {} as IDBRequest;
      }
      return original.apply(this, args);
    };
  proto.put = hook(put, true);
  proto.delete = hook(remove, false);
  return { crashed: () => crashed, undo };
}
