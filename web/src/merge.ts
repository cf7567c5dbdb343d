// The local view of a record: the server's copy (the base) with our queued writes replayed on top, in
// queue order. Server-owned fields always come from the base; a queued edit shows over every newer base
// until the server has it; a refused write leaves the queue and the server's copy rules again.

import type { Bookmark, BookmarkFields, Highlight, LocalBookmark, LocalCollection, LocalHighlight, Op } from "./model.ts";
import { provisionalDomain } from "./urls.ts";

export function nowIso(): string {
  return new Date().toISOString();
}

export function skeleton(id: string, at: string): LocalBookmark {
  return {
    clientBookmarkId: id,
    url: "",
    normalizedUrl: null,
    domain: null,
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
    createdAt: at,
    updatedAt: at,
    enrichedAt: null,
    deleted: false,
    deletedAt: null,
  };
}

function applyBookmarkOp(record: LocalBookmark | undefined, op: Op): LocalBookmark | undefined {
  if (op.kind === "put") {
    const out: LocalBookmark = { ...skeleton(op.id, op.createdAt), ...(record ?? {}) };
    const url = op.fields.url;
    if (url !== undefined && (url !== out.url || !out.domain)) {
      out.domain = provisionalDomain(url);
      out.normalizedUrl = null;
    }
    Object.assign(out, op.fields);
    out.deleted = false;
    out.deletedAt = null;
    return out;
  }
  if (op.kind === "delete") {
    return record ? { ...record, deleted: true, deletedAt: record.deletedAt ?? op.createdAt } : undefined;
  }
  return record;
}

function applyCollectionOp(record: LocalCollection | undefined, op: Op): LocalCollection | undefined {
  if (op.kind === "collection-put") {
    const fresh: LocalCollection = { id: op.id, name: "", parentId: null, createdAt: op.createdAt, updatedAt: op.createdAt };
    if (!record || record.deleted) {
      // A PUT on a deleted collection creates it again, at the top level unless it names a parent.
      return { ...fresh, ...(record ?? {}), parentId: null, ...op.fields, deleted: false, deletedAt: null };
    }
    return { ...fresh, ...record, ...op.fields };
  }
  if (op.kind === "collection-delete") {
    return record ? { ...record, deleted: true, deletedAt: op.createdAt } : undefined;
  }
  return record;
}

export function materializeBookmark(base: LocalBookmark | undefined, ops: readonly Op[]): LocalBookmark | undefined {
  let record = base ? { ...base } : undefined;
  for (const op of ops) record = applyBookmarkOp(record, op);
  return record;
}

export function materializeCollection(base: LocalCollection | undefined, ops: readonly Op[]): LocalCollection | undefined {
  let record = base ? { ...base } : undefined;
  for (const op of ops) record = applyCollectionOp(record, op);
  return record;
}

function applyHighlightOp(record: LocalHighlight | undefined, op: Op): LocalHighlight | undefined {
  if (op.kind === "highlight-put") {
    if (!record || record.deleted) {
      const fresh: LocalHighlight = {
        id: op.id,
        bookmarkId: op.fields.bookmarkId,
        quote: op.fields.quote,
        prefix: "",
        suffix: "",
        start: null,
        end: null,
        color: "yellow",
        note: "",
        anchor: null,
        createdAt: op.createdAt,
        updatedAt: op.createdAt,
      };
      return { ...fresh, ...(record ?? {}), ...op.fields, deleted: false, deletedAt: null };
    }
    // Only the color and the note change once a highlight exists.
    const out = { ...record };
    if (op.fields.color !== undefined) out.color = op.fields.color;
    if (op.fields.note !== undefined) out.note = op.fields.note;
    return out;
  }
  if (op.kind === "highlight-delete") {
    return record ? { ...record, deleted: true, deletedAt: op.createdAt } : undefined;
  }
  return record;
}

export function materializeHighlight(base: LocalHighlight | undefined, ops: readonly Op[]): LocalHighlight | undefined {
  let record = base ? { ...base } : undefined;
  for (const op of ops) record = applyHighlightOp(record, op);
  return record;
}

/** The highlight's base once the server accepted ``op`` (``response``: the PUT answer's data, if any). */
export function highlightAfterSent(base: LocalHighlight | undefined, op: Op, response: Highlight | null): LocalHighlight | undefined {
  if (op.kind === "highlight-put") return response ? { ...response, deleted: false, deletedAt: null } : applyHighlightOp(base, op);
  if (op.kind === "highlight-delete") return base ? { ...base, deleted: true, deletedAt: nowIso() } : undefined;
  return base;
}

/** Newest first by creation, then by id. */
export function newestHighlightFirst(a: Highlight, b: Highlight): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.id < b.id ? 1 : -1;
}

/** The base once the server accepted ``op`` (``response``: the PUT answer's data, if any). */
export function baseAfterSent(base: LocalBookmark | undefined, op: Op, response: Bookmark | null): LocalBookmark | undefined {
  if (op.kind === "put") return response ? { ...response, deleted: false, deletedAt: null } : applyBookmarkOp(base, op);
  if (op.kind === "delete") {
    return { ...(base ?? skeleton(op.id, op.createdAt)), deleted: true, deletedAt: nowIso() };
  }
  return base;
}

/** The client-written fields of a record: what a PUT needs to bring a deleted bookmark back as it was. */
export function clientFields(b: Bookmark): BookmarkFields {
  return {
    url: b.url,
    title: b.title,
    description: b.description,
    thumbnailUrl: b.thumbnailUrl,
    notes: b.notes,
    isFavorite: b.isFavorite,
    collectionIds: [...b.collectionIds],
    userTags: [...b.userTags],
    isArchived: b.isArchived,
    clientSavedAt: b.clientSavedAt,
    lastOpenedAt: b.lastOpenedAt,
  };
}

/** User tags as the server stores them: trimmed, non-empty, deduplicated case-insensitively, at most 50. */
export function normalizeTags(tags: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of tags) {
    const tag = raw.trim();
    if (!tag || [...tag].length > 64 || /\p{Cc}/u.test(tag)) continue;
    const key = tag.toLocaleLowerCase("und").normalize("NFKC");
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(tag);
  }
  return out.slice(0, 50);
}

export function parseTagInput(text: string): string[] {
  return normalizeTags(text.split(","));
}

/** Newest first: when the user saved it, else when the server created it; then by id. */
export function savedAt(b: Bookmark): string {
  return b.clientSavedAt ?? b.createdAt;
}

export function newestFirst(a: Bookmark, b: Bookmark): number {
  const x = savedAt(a);
  const y = savedAt(b);
  if (x !== y) return x < y ? 1 : -1;
  return a.clientBookmarkId < b.clientBookmarkId ? 1 : -1;
}

/** A stream position (an ISO timestamp, any number of fractional digits) as text that sorts in time order. */
function positionKey(ts: string): string {
  const match = /^(.*?)(?:\.(\d+))?Z$/.exec(ts);
  return match ? `${match[1]}.${(match[2] ?? "").padEnd(9, "0")}Z` : ts;
}

/**
 * Whether a record from a delta page may replace the base we hold: not when the base is newer. A page
 * read before one of our writes committed can arrive after that write's answer; its older copy would
 * hide the write until the next page. The stream position of a record is its ``updatedAt`` (a
 * tombstone's is its ``deletedAt``, set as its ``updatedAt`` when it is applied).
 */
export function pageRecordApplies(incoming: { updatedAt: string }, base: { updatedAt: string } | undefined): boolean {
  return !base || positionKey(incoming.updatedAt) >= positionKey(base.updatedAt);
}
