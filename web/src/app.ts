// The device: one database, session, store and sync engine for the page, plus the UI's shared state.

import { ApiError, errorOf } from "./api.ts";
import { AutoEnricher } from "./autoEnrich.ts";
import { Db } from "./db.ts";
import type { Bookmark, BookmarkFields, LocalBookmark, SearchResult } from "./model.ts";
import { clientFields, nowIso } from "./merge.ts";
import { PreviewQueue } from "./previews.ts";
import { SessionManager, authed, authedJson } from "./session.ts";
import { Store } from "./store.ts";
import { SyncEngine } from "./sync.ts";
import type { BulkRequest, BulkResult, BulkUndoResult } from "./bulk.ts";
import { DUPLICATES_PAGE_SIZE, type DuplicatePage, type MergeRequest } from "./duplicates.ts";
import { TRASH_PAGE_SIZE, type TrashPage } from "./trash.ts";

export interface Toast {
  id: number;
  text: string;
  undo?: () => void;
}

export class Device {
  readonly session: SessionManager;
  readonly store: Store;
  readonly sync: SyncEngine;
  readonly previews: PreviewQueue;
  readonly autoEnrich: AutoEnricher;
  toasts: Toast[] = [];
  private toastListeners = new Set<() => void>();
  private nextToast = 1;

  constructor(readonly db: Db) {
    this.session = new SessionManager(db);
    this.store = new Store(db);
    this.sync = new SyncEngine(db, this.store, this.session);
    this.sync.onRejected = (_op, error) => this.toast(`A change was refused: ${error.message}`);
    this.previews = new PreviewQueue(db, this.store, this.session, () => this.sync.kick());
    this.autoEnrich = new AutoEnricher(db, this.store, this.session, () => this.sync.wake());
    window.addEventListener("online", () => this.autoEnrich.wake());
  }

  static async open(): Promise<Device> {
    const device = new Device(await Db.open());
    await Promise.all([device.session.load(), device.store.load(), device.previews.load(), device.autoEnrich.load()]);
    return device;
  }

  // -- toasts ------------------------------------------------------------------------------------

  subscribeToasts(listener: () => void): () => void {
    this.toastListeners.add(listener);
    return () => this.toastListeners.delete(listener);
  }

  toast(text: string, undo?: () => void): void {
    const toast: Toast = { id: this.nextToast++, text, ...(undo ? { undo } : {}) };
    this.toasts = [...this.toasts.slice(-2), toast];
    this.toastListeners.forEach((l) => l());
    window.setTimeout(() => this.dismiss(toast.id), undo ? 8000 : 5000);
  }

  dismiss(id: number): void {
    this.toasts = this.toasts.filter((t) => t.id !== id);
    this.toastListeners.forEach((l) => l());
  }

  // -- writes (local first, then sent) -------------------------------------------------------------

  async save(id: string, fields: BookmarkFields): Promise<void> {
    await this.store.put(id, fields);
    this.sync.kick();
  }

  /** A new link: saved, its preview asked for, and queued for enrichment when this device does that. */
  async add(url: string, extra: BookmarkFields = {}): Promise<string> {
    const id = crypto.randomUUID();
    const previewed = this.previews.request(id, url); // the row says "Fetching title…" from its first paint
    await this.save(id, { url, clientSavedAt: nowIso(), ...extra });
    await previewed;
    this.previews.pump();
    await this.autoEnrich.request(id);
    return id;
  }

  async remove(ids: string[]): Promise<void> {
    const previous = ids.map((id) => this.store.get(id)).filter((b): b is LocalBookmark => !!b && !b.deleted);
    await this.store.remove(ids);
    this.sync.kick();
    const label = previous.length === 1 ? `Deleted “${previous[0]?.title || previous[0]?.url}”.` : `Deleted ${previous.length} bookmarks.`;
    this.toast(label, () => {
      void this.store.putMany(previous.map((b) => ({ id: b.clientBookmarkId, fields: clientFields(b) }))).then(() => this.sync.kick());
    });
  }

  async update(ids: string[], change: (b: LocalBookmark) => BookmarkFields): Promise<void> {
    const changes = ids
      .map((id) => this.store.get(id))
      .filter((b): b is LocalBookmark => !!b && !b.deleted)
      .map((b) => ({ id: b.clientBookmarkId, fields: change(b) }));
    await this.store.putMany(changes);
    this.sync.kick();
  }

  // -- session ---------------------------------------------------------------------------------

  signedOut = false;
  private sessionListeners = new Set<() => void>();

  subscribeSession(listener: () => void): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  private sessionChanged(): void {
    this.sessionListeners.forEach((l) => l());
  }

  /** First visit: a new anonymous library, no form. After a sign-out: only when asked. */
  async begin(): Promise<void> {
    if (!this.session.user) {
      if (await this.db.getMeta<boolean>("signedOut")) {
        this.signedOut = true;
        this.sessionChanged();
        return;
      }
      await this.session.startAnonymous();
    }
    this.signedOut = false;
    this.sync.onSignedOut = () => void this.endLocally();
    this.sync.start();
    this.startHelpers();
    this.sessionChanged();
  }

  private startHelpers(): void {
    this.previews.start();
    this.autoEnrich.start();
  }

  async startNew(): Promise<void> {
    await this.db.deleteMeta("signedOut");
    await this.session.startAnonymous();
    this.signedOut = false;
    this.sync.restart();
    this.startHelpers();
    this.sessionChanged();
  }

  /** This device joins the library of a pairing code; what it had locally leaves the device. */
  async join(code: string): Promise<void> {
    const before = this.session.user?.id;
    this.sync.stop();
    this.previews.stop();
    this.autoEnrich.stop();
    try {
      const user = await this.session.claim(code);
      await this.db.deleteMeta("signedOut");
      if (user.id !== before) {
        await this.db.clearLibrary();
        await this.store.clear();
        this.previews.clear();
        this.autoEnrich.clear();
      }
    } finally {
      this.signedOut = !this.session.user;
      if (this.session.user) {
        this.sync.restart();
        this.startHelpers();
      }
      this.sessionChanged();
    }
    this.toast("This device now shows your library.");
  }

  /** Ends the token family on the server and clears everything of the library from this device. */
  async signOut(): Promise<void> {
    this.sync.stop();
    await this.session.signOut();
    await this.endLocally();
  }

  private async endLocally(): Promise<void> {
    this.sync.stop();
    this.previews.stop();
    this.autoEnrich.stop();
    this.previews.clear();
    this.autoEnrich.clear();
    await this.db.clearAll();
    await this.db.setMeta("signedOut", true);
    await this.store.clear();
    this.session.user = null;
    this.signedOut = true;
    this.sessionChanged();
  }

  // -- online-only calls -------------------------------------------------------------------------

  async search(query: string, signal: AbortSignal): Promise<SearchResult[]> {
    const params = new URLSearchParams({ q: query, limit: "100" });
    const response = await authed(this.session, `/v1/bookmarks/search?${params}`, { signal });
    if (!response.ok) throw await errorOf(response);
    return ((await response.json()) as { data: { results: SearchResult[] } }).data.results;
  }

  async enrich(b: Bookmark): Promise<string> {
    const body = JSON.stringify({ clientBookmarkId: b.clientBookmarkId, url: b.url, clientSavedAt: b.clientSavedAt ?? nowIso() });
    const response = await authed(this.session, "/v1/enrichment/enqueue", { method: "POST", body });
    if (!response.ok) throw await errorOf(response);
    const data = ((await response.json()) as { data?: { cacheHit?: boolean } }).data;
    this.sync.wake();
    return data?.cacheHit ? "Done: it was already enriched." : "Enriching it now. Results appear here when ready.";
  }

  /** Asks for a check of the bookmark's link soon; the result reaches the library through delta. */
  async checkLink(id: string): Promise<void> {
    await this.json<{ accepted: boolean }>(`/v1/bookmarks/${encodeURIComponent(id)}/check-link`, { method: "POST" });
  }

  /** One page of the trash, most recently deleted first. */
  async trashPage(cursor: string | null): Promise<TrashPage> {
    const params = new URLSearchParams({ limit: String(TRASH_PAGE_SIZE) });
    if (cursor) params.set("cursor", cursor);
    return (await this.json<{ data: TrashPage }>(`/v1/trash?${params}`)).data;
  }

  /** Brings a bookmark back as it was; it reaches the library through delta, pulled at once. */
  async restoreFromTrash(id: string): Promise<void> {
    await this.json<{ data: Bookmark }>(`/v1/trash/${encodeURIComponent(id)}/restore`, { method: "POST" });
    this.sync.wake();
  }

  /** Deletes one bookmark of the trash for good (``null``: everything in it). */
  async purgeFromTrash(id: string | null): Promise<void> {
    const path = id === null ? "/v1/trash" : `/v1/trash/${encodeURIComponent(id)}`;
    const response = await authed(this.session, path, { method: "DELETE" });
    if (!response.ok) throw await errorOf(response);
  }

  /** One page of duplicate groups (bookmarks sharing a normalized URL), newest group first. */
  async duplicatesPage(cursor: string | null, limit: number = DUPLICATES_PAGE_SIZE): Promise<DuplicatePage> {
    const params = new URLSearchParams({ limit: String(limit) });
    if (cursor) params.set("cursor", cursor);
    return (await this.json<{ data: DuplicatePage }>(`/v1/duplicates?${params}`)).data;
  }

  /** Merges a group into the kept one; the others go to the trash. Pulled at once. */
  async mergeDuplicates(request: MergeRequest): Promise<Bookmark> {
    const kept = (await this.json<{ data: Bookmark }>("/v1/duplicates/merge", { method: "POST", body: JSON.stringify(request) })).data;
    this.sync.wake();
    return kept;
  }

  /** Undoes a merge: each merged bookmark back from the trash (a 404 is one already back or gone). */
  async unmerge(ids: string[]): Promise<number> {
    let restored = 0;
    for (const id of ids) {
      try {
        await this.json<{ data: Bookmark }>(`/v1/trash/${encodeURIComponent(id)}/restore`, { method: "POST" });
        restored += 1;
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 404)) throw e;
      }
    }
    this.sync.wake();
    return restored;
  }

  /** One bulk change on the server (``ids`` or ``query``); the changes come back through delta, pulled at once. */
  async bulk(request: BulkRequest): Promise<BulkResult> {
    const result = (await this.json<{ data: BulkResult }>("/v1/bookmarks/bulk", { method: "POST", body: JSON.stringify(request) })).data;
    this.sync.wake();
    return result;
  }

  /** Takes a bulk change back (within the hour the server keeps its token). */
  async undoBulk(undoToken: string): Promise<BulkUndoResult> {
    const result = (await this.json<{ data: BulkUndoResult }>("/v1/bookmarks/bulk/undo", { method: "POST", body: JSON.stringify({ undoToken }) })).data;
    this.sync.wake();
    return result;
  }

  async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    return authedJson<T>(this.session, path, init);
  }
}

export function enrichErrorText(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === "consent-required") return "Turn on “Use AI enrichment” in Settings first.";
    if (error.code === "quota-exceeded") {
      const wait = error.retryAfter ? ` Try again in ${humanSeconds(error.retryAfter)}.` : "";
      return `You've used your enrichment quota for now.${wait} Pro has no limit.`;
    }
    if (error.code === "invalid-url") return "This address can't be enriched.";
    return error.message;
  }
  return "You're offline. Try again when you're back online.";
}

export function humanSeconds(seconds: number): string {
  if (seconds < 90) return `${Math.ceil(seconds)} seconds`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} minutes`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} hours`;
  return `${Math.round(seconds / 86400)} days`;
}
