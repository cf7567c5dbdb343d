// The library in memory, mirrored in IndexedDB: bases (the server's copies of bookmarks, collections and
// highlights), the queue, and the view
// (bases with queued writes replayed). Views read from here; every local write goes through here.

import { type FlushResult, WriteQueue, foldEdits } from "../../clients/shared/queue.ts";
import type { ApiError } from "./api.ts";
import { type Db, queueStorage } from "./db.ts";
import {
  baseAfterSent,
  highlightAfterSent,
  materializeBookmark,
  materializeCollection,
  materializeHighlight,
  newestFirst,
  newestHighlightFirst,
  nowIso,
  pageRecordApplies,
  skeleton,
} from "./merge.ts";
import type {
  Bookmark,
  BookmarkFields,
  Collection,
  CollectionFields,
  DeltaPage,
  Highlight,
  HighlightFields,
  LocalBookmark,
  LocalCollection,
  LocalHighlight,
  NewOp,
  Op,
  RecordFamily,
} from "./model.ts";
import { blankHighlight, familyOf } from "./model.ts";
import { normalizeUrl } from "./urls.ts";

type Listener = () => void;

export class Store {
  private bases = new Map<string, LocalBookmark>();
  private collectionBases = new Map<string, LocalCollection>();
  private highlightBases = new Map<string, LocalHighlight>();
  private serverTurn: Promise<unknown> = Promise.resolve();
  /** The client core's write queue on the database's `queue` store; typing in a field makes many edits of
   * one record, and the last unsent PUT of a bookmark or highlight absorbs the next one. */
  private readonly writes: WriteQueue<Op>;
  version = 0;
  private listeners = new Set<Listener>();
  private views = new Map<string, LocalBookmark>();
  private sorted: LocalBookmark[] | null = null;
  private collectionViews: LocalCollection[] | null = null;
  private byUrl: Map<string, LocalBookmark> | null = null;
  private highlightViews: LocalHighlight[] | null = null;

  // Other tabs of this browser share the database: a change here tells them to re-read it.
  private readonly channel: BroadcastChannel | null =
    typeof BroadcastChannel === "undefined" ? null : new BroadcastChannel("bookmarks-store");
  private reloadTimer: ReturnType<typeof setTimeout> | undefined;

  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
    this.writes = new WriteQueue<Op>(queueStorage(db), { fold: foldEdits<Op>(["put", "highlight-put"]) });
    if (this.channel) {
      this.channel.onmessage = () => {
        clearTimeout(this.reloadTimer);
        this.reloadTimer = setTimeout(() => void this.load(), 150);
      };
    }
  }

  async load(): Promise<void> {
    const [bookmarks, collections, highlights] = await Promise.all([
      this.db.all<LocalBookmark>("bookmarks"),
      this.db.all<LocalCollection>("collections"),
      this.db.all<LocalHighlight>("highlights"),
      this.writes.load(),
    ]);
    this.bases = new Map(bookmarks.map((b) => [b.clientBookmarkId, b]));
    this.collectionBases = new Map(collections.map((c) => [c.id, c]));
    this.highlightBases = new Map(highlights.map((h) => [h.id, h]));
    this.changed(null, false);
  }

  /** The writes not yet sent, in order. */
  get queue(): Op[] {
    return this.writes.ops;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** ``ids``: the bookmarks whose view changed (null: any of them). */
  private changed(ids: Iterable<string> | null, local = true): void {
    if (local) this.channel?.postMessage("changed");
    if (ids === null) this.views.clear();
    else for (const id of ids) this.views.delete(id);
    this.sorted = null;
    this.collectionViews = null;
    this.byUrl = null;
    this.highlightViews = null;
    this.version += 1;
    for (const listener of this.listeners) listener();
  }

  // -- reads -------------------------------------------------------------------------------------

  private opsFor(id: string, family: RecordFamily): Op[] {
    return this.queue.filter((op) => op.id === id && familyOf(op) === family);
  }

  get(id: string): LocalBookmark | undefined {
    let view = this.views.get(id);
    if (view === undefined) {
      view = materializeBookmark(this.bases.get(id), this.opsFor(id, "bookmark"));
      if (view) this.views.set(id, view);
    }
    return view;
  }

  /** Whether the server has ``id``: it answered a write of it or sent it in delta, and not as deleted. */
  onServer(id: string): boolean {
    const base = this.bases.get(id);
    return !!base && !base.deleted;
  }

  pendingIds(): Set<string> {
    return new Set(this.queue.filter((op) => familyOf(op) === "bookmark").map((op) => op.id));
  }

  /** Live bookmarks, newest first. */
  list(): LocalBookmark[] {
    if (this.sorted) return this.sorted;
    const ids = new Set([...this.bases.keys(), ...this.pendingIds()]);
    const out: LocalBookmark[] = [];
    for (const id of ids) {
      const view = this.get(id);
      if (view && !view.deleted) out.push(view);
    }
    out.sort(newestFirst);
    this.sorted = out;
    return out;
  }

  collections(): LocalCollection[] {
    if (this.collectionViews) return this.collectionViews;
    const ids = new Set([...this.collectionBases.keys()]);
    for (const op of this.queue) if (familyOf(op) === "collection") ids.add(op.id);
    const out: LocalCollection[] = [];
    for (const id of ids) {
      const view = materializeCollection(this.collectionBases.get(id), this.opsFor(id, "collection"));
      if (view && !view.deleted) out.push(view);
    }
    const live = new Set(out.map((c) => c.id));
    // A parent deleted elsewhere (or merged away) leaves its child at the top level.
    this.collectionViews = out
      .map((c) => (c.parentId && !live.has(c.parentId) ? { ...c, parentId: null } : c))
      .sort((a, b) => a.name.localeCompare(b.name));
    return this.collectionViews;
  }

  /** Every live highlight of a live bookmark, newest first. */
  highlights(): LocalHighlight[] {
    if (this.highlightViews) return this.highlightViews;
    const ids = new Set(this.highlightBases.keys());
    for (const op of this.queue) if (familyOf(op) === "highlight") ids.add(op.id);
    const out: LocalHighlight[] = [];
    for (const id of ids) {
      const view = this.highlight(id);
      const bookmark = view && !view.deleted ? this.get(view.bookmarkId) : undefined;
      if (view && bookmark && !bookmark.deleted) out.push(view);
    }
    this.highlightViews = out.sort(newestHighlightFirst);
    return this.highlightViews;
  }

  highlight(id: string): LocalHighlight | undefined {
    return materializeHighlight(this.highlightBases.get(id), this.opsFor(id, "highlight"));
  }

  highlightsOf(bookmarkId: string): LocalHighlight[] {
    return this.highlights().filter((h) => h.bookmarkId === bookmarkId);
  }

  /** The live bookmark whose normalized URL equals ``url``'s, if any. */
  findByUrl(url: string): LocalBookmark | undefined {
    const key = normalizeUrl(url);
    if (!key) return undefined;
    if (!this.byUrl) {
      this.byUrl = new Map();
      for (const b of this.list()) {
        this.byUrl.set(b.normalizedUrl ?? normalizeUrl(b.url) ?? b.url, b);
        const local = normalizeUrl(b.url);
        if (local && !this.byUrl.has(local)) this.byUrl.set(local, b);
      }
    }
    return this.byUrl.get(key);
  }

  // -- local writes ------------------------------------------------------------------------------

  private async queueOps(ops: NewOp[], ids: string[]): Promise<void> {
    await this.writes.add(ops);
    this.changed(ids);
  }

  /** Every PUT names the URL (the server requires it); an edit takes it from the current view. */
  private withUrl(id: string, fields: BookmarkFields): BookmarkFields {
    if (fields.url !== undefined) return fields;
    const url = this.get(id)?.url;
    return url ? { url, ...fields } : fields;
  }

  async put(id: string, fields: BookmarkFields): Promise<void> {
    await this.queueOps([{ kind: "put", id, fields: this.withUrl(id, fields), createdAt: nowIso() }], [id]);
  }

  async remove(ids: string[]): Promise<void> {
    const at = nowIso();
    await this.queueOps(
      ids.map((id) => ({ kind: "delete", id, createdAt: at })),
      ids,
    );
  }

  async putMany(changes: { id: string; fields: BookmarkFields }[]): Promise<void> {
    const at = nowIso();
    await this.queueOps(
      changes.map((c) => ({ kind: "put", id: c.id, fields: this.withUrl(c.id, c.fields), createdAt: at })),
      changes.map((c) => c.id),
    );
  }

  async putCollection(id: string, fields: CollectionFields): Promise<void> {
    await this.queueOps([{ kind: "collection-put", id, fields, createdAt: nowIso() }], []);
  }

  async deleteCollection(id: string): Promise<void> {
    // Its children move to its parent, as the server will do.
    const gone = this.collections().find((c) => c.id === id);
    const children = this.collections().filter((c) => c.parentId === id);
    const ops: NewOp[] = children.map((c) => ({
      kind: "collection-put",
      id: c.id,
      fields: { name: c.name, parentId: gone?.parentId ?? null },
      createdAt: nowIso(),
    }));
    // The server strips the id from its bookmarks; until delta brings them, a deleted id is not shown.
    ops.push({ kind: "collection-delete", id, createdAt: nowIso() });
    await this.queueOps(ops, []);
  }

  /**
   * Creates a highlight (``fields`` with its context and offsets) or changes its color or note. Queued after
   * every earlier write, so a bookmark saved on this device reaches the server before its highlights.
   */
  async putHighlight(id: string, fields: HighlightFields): Promise<void> {
    await this.queueOps([{ kind: "highlight-put", id, fields, createdAt: nowIso() }], []);
  }

  async deleteHighlight(id: string): Promise<void> {
    await this.queueOps([{ kind: "highlight-delete", id, createdAt: nowIso() }], []);
  }

  // -- what the server says ----------------------------------------------------------------------

  /**
   * Runs ``work`` after every earlier call has finished: what the server says (answers to our writes and
   * delta pages) is compared with the bases and written as one step, so an older copy never lands last.
   */
  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.serverTurn.then(work, work);
    this.serverTurn = run.catch(() => undefined);
    return run;
  }

  completed(op: Op, response: Bookmark | Collection | Highlight | null): Promise<void> {
    return this.serially(() => this.applyCompleted(op, response));
  }

  private async applyCompleted(op: Op, response: Bookmark | Collection | Highlight | null): Promise<void> {
    const family = familyOf(op);
    if (family === "bookmark") {
      const current = this.bases.get(op.id);
      const sent = baseAfterSent(current, op, response as Bookmark | null);
      // A page applied while the write was in flight may already hold a newer copy than its answer.
      const base = sent && current && op.kind === "put" && !pageRecordApplies(sent, current) ? current : sent;
      await this.db.completeOp(op.seq, base ? { bookmarks: [base] } : {}, op);
      if (base) this.bases.set(op.id, base);
    } else if (family === "highlight") {
      const current = this.highlightBases.get(op.id);
      const sent = highlightAfterSent(current, op, response as Highlight | null);
      const base = sent && current && op.kind === "highlight-put" && !pageRecordApplies(sent, current) ? current : sent;
      await this.db.completeOp(op.seq, base ? { highlights: [base] } : {}, op);
      if (base) this.highlightBases.set(op.id, base);
    } else {
      const previous = this.collectionBases.get(op.id);
      const base: LocalCollection | undefined =
        op.kind === "collection-put"
          ? response
            ? { ...(response as Collection), deleted: false, deletedAt: null }
            : previous
          : previous
            ? { ...previous, deleted: true, deletedAt: nowIso() }
            : undefined;
      await this.db.completeOp(op.seq, base ? { collections: [base] } : {}, op);
      if (base) this.collectionBases.set(op.id, base);
    }
    this.writes.forgotten(op.seq);
    this.changed([op.id]);
  }

  /**
   * Sends the queue in order with ``send`` (the client core's flush): an answer becomes the record's base,
   * stored with the op's forgetting; a refused op leaves the queue, the server's copy shows again and
   * ``onRejected`` reports it; anything else stops the flush with the op first in line.
   */
  flush<Answer extends Bookmark | Collection | Highlight | null>(
    send: (op: Op) => Promise<Answer>,
    onRejected: (op: Op, error: ApiError) => void,
  ): Promise<FlushResult> {
    return this.writes.flush(send, {
      accepted: (op, answer) => this.completed(op, answer),
      refused: (op, error) => {
        this.changed([op.id]);
        onRejected(op, error);
      },
    });
  }

  applyPage(page: DeltaPage, cursor: string | null): Promise<void> {
    return this.serially(() => this.applyPageNow(page, cursor));
  }

  private async applyPageNow(page: DeltaPage, cursor: string | null): Promise<void> {
    const bookmarks: LocalBookmark[] = page.upserts.map((b) => ({ ...b, deleted: false, deletedAt: null }));
    for (const t of page.tombstones) {
      const previous = this.bases.get(t.clientBookmarkId);
      const record = previous ?? skeleton(t.clientBookmarkId, t.deletedAt);
      bookmarks.push({ ...record, updatedAt: t.deletedAt, deleted: true, deletedAt: t.deletedAt });
    }
    const collections: LocalCollection[] = page.collections.map((c) => ({ ...c, deleted: false, deletedAt: null }));
    for (const t of page.collectionTombstones) {
      const previous = this.collectionBases.get(t.id);
      collections.push({
        ...(previous ?? { id: t.id, name: t.id, parentId: null, createdAt: t.deletedAt, updatedAt: t.deletedAt }),
        updatedAt: t.deletedAt,
        deleted: true,
        deletedAt: t.deletedAt,
      });
    }
    const highlights: LocalHighlight[] = (page.highlights ?? []).map((h) => ({ ...h, deleted: false, deletedAt: null }));
    for (const t of page.highlightTombstones ?? []) {
      const previous = this.highlightBases.get(t.id);
      highlights.push({
        ...(previous ?? blankHighlight(t.id, t.deletedAt)),
        updatedAt: t.deletedAt,
        deleted: true,
        deletedAt: t.deletedAt,
      });
    }
    const newBookmarks = bookmarks.filter((b) => pageRecordApplies(b, this.bases.get(b.clientBookmarkId)));
    const newCollections = collections.filter((c) => pageRecordApplies(c, this.collectionBases.get(c.id)));
    const newHighlights = highlights.filter((h) => pageRecordApplies(h, this.highlightBases.get(h.id)));
    await this.db.applyPage({ bookmarks: newBookmarks, collections: newCollections, highlights: newHighlights }, cursor);
    for (const b of newBookmarks) this.bases.set(b.clientBookmarkId, b);
    for (const c of newCollections) this.collectionBases.set(c.id, c);
    for (const h of newHighlights) this.highlightBases.set(h.id, h);
    const changed = newBookmarks.length + newCollections.length + newHighlights.length;
    if (changed) this.changed(newBookmarks.length > 200 ? null : newBookmarks.map((b) => b.clientBookmarkId));
  }

  async clear(): Promise<void> {
    this.bases.clear();
    this.collectionBases.clear();
    this.highlightBases.clear();
    this.writes.reset();
    this.changed(null);
  }
}
