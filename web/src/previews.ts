// The links waiting for their preview (title, description, picture from GET /v1/previews). Kept in
// IndexedDB (meta "previews"), so a link saved offline still gets its preview after a reload, once the
// network is back. At most four are asked for at a time; what arrives is written through the store as
// an ordinary edit, filling only the fields that are still empty.

import { ApiError, Offline, TRANSIENT, errorOf } from "./api.ts";
import { backoffMs } from "./backoff.ts";
import type { Db } from "./db.ts";
import { type Preview, previewFill } from "./preview.ts";
import { type SessionManager, authed } from "./session.ts";
import type { Store } from "./store.ts";

const META_KEY = "previews";
const CONCURRENCY = 4;
const ATTEMPTS = 3;
const OFFLINE_RETRY_MS = 10_000;

interface Waiting {
  id: string;
  url: string;
}

export class PreviewQueue {
  private waiting = new Map<string, string>(); // clientBookmarkId → the URL it was saved with
  private running = new Set<string>();
  private attempts = new Map<string, number>();
  private blockedUntil = 0; // the server asked us to wait (429, or a failure being retried)
  private offlineUntil = 0; // the server could not be reached: tried again soon, or when the network returns
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private listeners = new Set<() => void>();

  constructor(
    private readonly db: Db,
    private readonly store: Store,
    private readonly session: SessionManager,
    /** Called after a preview was written: the store's write still has to be sent. */
    private readonly written: () => void,
  ) {}

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  async load(): Promise<void> {
    const stored = (await this.db.getMeta<Waiting[]>(META_KEY)) ?? [];
    for (const { id, url } of stored) if (!this.waiting.has(id)) this.waiting.set(id, url);
    this.changed();
  }

  private persist(): Promise<void> {
    const list: Waiting[] = [...this.waiting].map(([id, url]) => ({ id, url }));
    return this.db.setMeta(META_KEY, list).catch(() => undefined);
  }

  /** Whether ``id``'s preview is on its way: awaited, and the device online (offline, the row shows the URL). */
  fetching(id: string): boolean {
    return this.waiting.has(id) && navigator.onLine;
  }

  /** Whether ``id``'s preview is still awaited, online or not. */
  has(id: string): boolean {
    return this.waiting.has(id);
  }

  /** ``id`` was just added: its preview is awaited from now on (shown at once, stored, then asked for). */
  async request(id: string, url: string): Promise<void> {
    this.waiting.set(id, url);
    this.changed();
    await this.persist();
  }

  /** Forget everything (sign-out, another library). */
  clear(): void {
    this.waiting.clear();
    this.attempts.clear();
    this.changed();
  }

  private listening = false;

  start(): void {
    this.stopped = false;
    if (!this.listening) {
      this.listening = true;
      window.addEventListener("online", () => this.wake());
      window.addEventListener("offline", () => this.changed());
    }
    this.pump();
  }

  /** The network (or the server) is back: what waited for it is asked for now. */
  wake(): void {
    this.offlineUntil = 0;
    this.changed();
    this.pump();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Ask for as many waiting previews as may run now. Called on add, when the network returns, on a timer. */
  pump(): void {
    if (this.stopped || !navigator.onLine) return;
    const wait = Math.max(this.blockedUntil, this.offlineUntil) - Date.now();
    if (wait > 0) {
      this.later(wait);
      return;
    }
    for (const [id, url] of this.waiting) {
      if (this.running.size >= CONCURRENCY) return;
      if (this.running.has(id)) continue;
      this.running.add(id);
      void this.fetchOne(id, url).finally(() => {
        this.running.delete(id);
        this.pump();
      });
    }
  }

  private later(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.pump(), ms);
  }

  private async done(id: string): Promise<void> {
    this.waiting.delete(id);
    this.attempts.delete(id);
    this.changed();
    await this.persist();
  }

  private async fetchOne(id: string, url: string): Promise<void> {
    const current = this.store.get(id);
    if (!current || current.deleted || current.url !== url) {
      await this.done(id);
      return;
    }
    let preview: Preview;
    try {
      const response = await authed(this.session, `/v1/previews?${new URLSearchParams({ url })}`);
      if (!response.ok) throw await errorOf(response);
      preview = ((await response.json()) as { data: Preview }).data;
    } catch (error) {
      await this.failed(id, error);
      return;
    }
    // The fields are chosen against the bookmark as it is now, not as it was when the link was added.
    const now = this.store.get(id);
    if (now && !now.deleted && now.url === url) {
      const fields = previewFill(now, preview);
      if (Object.keys(fields).length) {
        await this.store.put(id, fields);
        this.written();
      }
    }
    await this.done(id);
  }

  private async failed(id: string, error: unknown): Promise<void> {
    if (error instanceof Offline) {
      // Kept: asked for again when the network returns, or in a while if the browser thinks it is online.
      this.offlineUntil = Date.now() + OFFLINE_RETRY_MS;
      return;
    }
    if (error instanceof ApiError && error.status === 429) {
      // Too many at once: every waiting link stays, and nothing is asked until the server says.
      this.blockedUntil = Date.now() + (error.retryAfter ?? 5) * 1000;
      return;
    }
    if (error instanceof ApiError && TRANSIENT.has(error.status)) {
      const attempt = (this.attempts.get(id) ?? 0) + 1;
      this.attempts.set(id, attempt);
      if (attempt < ATTEMPTS) {
        this.blockedUntil = Math.max(this.blockedUntil, Date.now() + (error.retryAfter ? error.retryAfter * 1000 : backoffMs(attempt)));
        return;
      }
    }
    // A bad address, a page that cannot be had, a server that keeps failing: the row shows the URL.
    await this.done(id);
  }
}
