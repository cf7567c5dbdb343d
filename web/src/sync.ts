// The network side of the device: send the queue in order, pull delta pages, listen for nudges.
// Sending and pulling take turns (one chain, and one lock for every tab of this browser), so a page
// fetched before one of our writes reached the server is never applied after that write's answer.

import type { BookmarkUpsert, CollectionUpsert } from "../../clients/shared/model.ts";
import { type ApiClient, ApiError, Offline, apiClient } from "./api.ts";
import type { Db } from "./db.ts";
import type { Bookmark, Collection, DeltaPage, Highlight, Op } from "./model.ts";
import type { SessionManager } from "./session.ts";
import type { Store } from "./store.ts";
import { backoffMs } from "./backoff.ts";

export type SyncState = "synced" | "syncing" | "offline" | "error";
const PAGE_SIZE = 1000;
const CLOSE_UNAUTHORIZED = 4401;

/** Ends a cycle that outlived ``stop()``: its answers belong to a session or a library that has ended. */
class Superseded extends Error {}

async function withLock<T>(name: string, work: () => Promise<T>): Promise<T> {
  const locks = (navigator as Navigator & { locks?: LockManager }).locks;
  return locks ? (locks.request(name, work) as Promise<T>) : work();
}

export class SyncEngine {
  state: SyncState = navigator.onLine ? "syncing" : "offline";
  lastError: string | null = null;
  onRejected: (op: Op, error: ApiError) => void = () => {};
  onSignedOut: () => void = () => {};
  private chain: Promise<unknown> = Promise.resolve();
  private socket: WebSocket | null = null;
  private socketAttempts = 0;
  private retryTimer: number | undefined;
  private socketTimer: number | undefined;
  private stopped = false;
  /** Counts ``stop()`` calls: a cycle applies what the server says only while it is the one it began in. */
  private generation = 0;
  /** The pull cycle that is queued and has not begun yet, if any. */
  private queuedPull: Promise<void> | null = null;
  private listeners = new Set<() => void>();

  private readonly db: Db;
  private readonly store: Store;
  private readonly session: SessionManager;
  /** The client core's API client with the session's tokens. */
  private readonly api: ApiClient;

  constructor(db: Db, store: Store, session: SessionManager) {
    this.db = db;
    this.store = store;
    this.session = session;
    this.api = apiClient(session);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private setState(state: SyncState, error: string | null = null): void {
    // A cycle that began online can end after the network went away: it has not synced what comes next.
    if ((state === "synced" || state === "syncing") && !navigator.onLine) state = "offline";
    this.state = state;
    this.lastError = error;
    for (const listener of this.listeners) listener();
  }

  private started = false;

  start(): void {
    if (this.started) return this.wake();
    this.started = true;
    window.addEventListener("online", () => this.wake());
    window.addEventListener("offline", () => {
      this.setState("offline");
      this.socket?.close();
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.wake();
    });
    this.wake();
  }

  /** After the session changed (new user, new tokens): a fresh socket and a full pull. */
  restart(): void {
    this.stopped = false;
    this.socketAttempts = 0;
    if (!this.started) this.start();
    else this.wake();
  }

  stop(): void {
    this.stopped = true;
    this.generation += 1;
    window.clearTimeout(this.retryTimer);
    window.clearTimeout(this.socketTimer);
    const socket = this.socket;
    this.socket = null;
    socket?.close();
  }

  /** Network is (maybe) back: send, pull, and make sure the socket is open. */
  wake(): void {
    if (this.stopped) return;
    void this.run(true);
    this.connect();
  }

  /** Called after every local write: send it now if we can. */
  kick(): void {
    if (!this.stopped) void this.run(false);
  }

  /** One cycle at a time; requests that arrive while a pull cycle waits to begin fold into it (a burst of
   * nudges during a sync makes one follow-up pull, not one each), and they share its promise. */
  run(pull: boolean): Promise<void> {
    if (this.queuedPull) return this.queuedPull; // it sends the queue too
    const next = this.chain.then(() => withLock("bookmarks-sync", () => this.cycle(pull)));
    if (pull) this.queuedPull = next;
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async cycle(pull: boolean): Promise<void> {
    const generation = this.generation;
    if (pull) this.queuedPull = null; // from here on, a nudge may mean changes this cycle's pages miss
    if (this.stopped) return; // queued before a stop: nothing is sent or pulled until a restart
    if (!navigator.onLine) {
      this.setState("offline");
      return;
    }
    this.setState("syncing");
    try {
      await this.flush(generation);
      if (pull || this.store.queue.length === 0) await this.pull(generation);
      this.setState(this.store.queue.length ? "error" : "synced");
      window.clearTimeout(this.retryTimer);
    } catch (error) {
      if (!(error instanceof Superseded)) this.failed(error);
    }
  }

  private ensureCurrent(generation: number): void {
    if (generation !== this.generation) throw new Superseded();
  }

  private failed(error: unknown): void {
    if (error instanceof Offline) {
      this.setState("offline");
      this.retryLater(5000);
    } else if (error instanceof ApiError && error.code === "signed-out") {
      this.setState("error", "You're signed out.");
      this.onSignedOut();
    } else if (error instanceof ApiError && error.status === 401) {
      this.setState("error", "Your session ended. Sign in again.");
      this.onSignedOut();
    } else {
      const message = error instanceof Error ? error.message : String(error);
      this.setState("error", message);
      this.retryLater(error instanceof ApiError && error.retryAfter ? error.retryAfter * 1000 : 10_000);
    }
  }

  private retryLater(ms: number): void {
    window.clearTimeout(this.retryTimer);
    this.retryTimer = window.setTimeout(() => void this.run(true), ms);
  }

  /** Sends queued writes in order (the client core's flush); what stops it is thrown, the op first in line. */
  private async flush(generation: number): Promise<void> {
    this.ensureCurrent(generation);
    const result = await this.store.flush(
      async (op) => {
        this.ensureCurrent(generation);
        // Stopped meanwhile (a sign-out, a join): the answer or the refusal is dropped, the op stays queued.
        const answer = await this.send(op).catch((error: unknown) => {
          this.ensureCurrent(generation);
          throw error;
        });
        this.ensureCurrent(generation);
        return answer;
      },
      (op, error) => this.onRejected(op, error),
    );
    if ("stoppedBy" in result) throw result.stoppedBy;
  }

  /** The server's record (null for a delete); throws the ApiError of a refusal or what stopped the request. */
  private async send(op: Op): Promise<Bookmark | Collection | Highlight | null> {
    const api = this.api;
    // A queued PUT carries the fields the person changed (a bookmark's always with its URL): the API's PUT
    // takes the fields it is given.
    switch (op.kind) {
      case "put":
        return api.putBookmark(op.id, op.fields as BookmarkUpsert);
      case "collection-put":
        return api.putCollection(op.id, op.fields as CollectionUpsert);
      case "highlight-put":
        return api.putHighlight(op.id, op.fields);
      case "delete":
        return api.deleteBookmark(op.id).then(() => null);
      case "collection-delete":
        return api.deleteCollection(op.id).then(() => null);
      case "highlight-delete":
        return api.deleteHighlight(op.id).then(() => null);
    }
  }

  /** Delta pages until the end; the stored cursor is the one of the last request made. */
  private async pull(generation: number): Promise<void> {
    let cursor = (await this.db.getMeta<string | null>("cursor")) ?? null;
    for (;;) {
      this.ensureCurrent(generation);
      let page: DeltaPage;
      try {
        page = await this.api.delta(cursor, PAGE_SIZE);
      } catch (error) {
        if (error instanceof ApiError && error.status === 400 && error.code === "invalid-cursor" && cursor) {
          cursor = null; // start that sync from scratch
          continue;
        }
        throw error;
      }
      this.ensureCurrent(generation);
      await this.store.applyPage(page, page.nextCursor ?? cursor);
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }

  // -- nudges ------------------------------------------------------------------------------------

  private connect(): void {
    if (this.stopped || this.socket || !navigator.onLine) return;
    window.clearTimeout(this.socketTimer);
    void this.session.token().then(
      (token) => this.open(token),
      () => this.reconnectLater(),
    );
  }

  private open(token: string): void {
    if (this.socket || this.stopped) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/v1/events?access_token=${encodeURIComponent(token)}`);
    this.socket = socket;
    let opened = 0;
    socket.onopen = () => {
      opened = Date.now();
      void this.run(true); // whatever changed while the socket was down
    };
    socket.onmessage = (event) => {
      if (this.socket !== socket) return;
      try {
        const message = JSON.parse(String(event.data)) as { type?: string };
        if (message.type === "bookmarks_changed") void this.run(true);
      } catch {
        // Not a message of ours: ignore it.
      }
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return; // replaced on purpose (stop, new session)
      this.socket = null;
      if (opened && Date.now() - opened > 30_000) this.socketAttempts = 0;
      if (event.code === CLOSE_UNAUTHORIZED) {
        void this.session.refresh(token).then(
          () => this.connect(),
          (error: unknown) => this.failed(error),
        );
        return;
      }
      this.reconnectLater();
    };
  }

  private reconnectLater(): void {
    if (this.stopped || !navigator.onLine) return;
    window.clearTimeout(this.socketTimer);
    this.socketAttempts += 1;
    this.socketTimer = window.setTimeout(() => this.connect(), backoffMs(this.socketAttempts));
  }
}
