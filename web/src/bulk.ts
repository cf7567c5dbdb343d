// Bulk changes through the server: one ``POST /v1/bookmarks/bulk`` for a selection (its ids) or for
// everything a search matches (its text as ``query``), and the words said of what it changed.

import type { BulkResult, UndoResult as BulkUndoResult, BulkRequest as WireBulkRequest } from "../../clients/shared/model.ts";

export type BulkAction =
  | "archive"
  | "unarchive"
  | "favorite"
  | "unfavorite"
  | "delete"
  | "addTags"
  | "removeTags"
  | "addToCollection"
  | "removeFromCollection";

/** What a bulk change acts on: bookmarks picked by hand, or every live match of a search. */
export type BulkTarget = { kind: "ids"; ids: string[] } | { kind: "query"; query: string };

/** The wire's request with its action narrowed to those the server knows (the document says "string"). */
export type BulkRequest = Omit<WireBulkRequest, "action"> & { action: BulkAction };
export type { BulkResult, BulkUndoResult };

/** The most ids one call takes (the server's bound). */
export const MAX_BULK_IDS = 1000;

/** The request body: exactly one of ``ids`` and ``query``, plus the action's own field. */
export function bulkRequest(action: BulkAction, target: BulkTarget, extra: { tags?: string[]; collectionId?: string } = {}): BulkRequest {
  const request: BulkRequest = { action };
  if (target.kind === "ids") request.ids = [...new Set(target.ids)];
  else request.query = target.query.trim();
  if (action === "addTags" || action === "removeTags") {
    if (!extra.tags?.length) throw new Error(`${action} needs tags`);
    request.tags = extra.tags;
  }
  if (action === "addToCollection" || action === "removeFromCollection") {
    if (!extra.collectionId) throw new Error(`${action} needs a collection`);
    request.collectionId = extra.collectionId;
  }
  return request;
}

/** Whether the server can take ``target`` in one call (ids within the bound, a search that says something). */
export function fitsOneCall(target: BulkTarget): boolean {
  return target.kind === "ids" ? target.ids.length > 0 && new Set(target.ids).size <= MAX_BULK_IDS : target.query.trim() !== "";
}

function count(n: number): string {
  return `${n.toLocaleString("en")} ${n === 1 ? "bookmark" : "bookmarks"}`;
}

const DONE: Record<BulkAction, (n: string) => string> = {
  archive: (n) => `Archived ${n}.`,
  unarchive: (n) => `Unarchived ${n}.`,
  favorite: (n) => `Favorited ${n}.`,
  unfavorite: (n) => `Unfavorited ${n}.`,
  delete: (n) => `Deleted ${n}.`,
  addTags: (n) => `Tagged ${n}.`,
  removeTags: (n) => `Untagged ${n}.`,
  addToCollection: (n) => `Filed ${n}.`,
  removeFromCollection: (n) => `Took ${n} out of the collection.`,
};

/** "Archived 12 bookmarks." — what a bulk change did, counting only the bookmarks it changed. */
export function bulkDoneText(action: BulkAction, affected: number): string {
  if (affected === 0) return "Nothing changed: they were like that already.";
  return DONE[action](count(affected));
}

/** What an undo put back, and what it left because a later change holds. */
export function bulkUndoText(result: BulkUndoResult): string {
  const back = result.restored === 0 ? "Nothing to put back." : `Put back ${count(result.restored)}.`;
  return result.skipped ? `${back} ${count(result.skipped)} changed since, and stay as they are.` : back;
}
