// Duplicates: the server's groups of bookmarks sharing a normalized URL, and what the view says of them.
// The calls (online only) are Device's, in app.ts; a merge and its undo reach this device through delta.

import type { DuplicateGroup, DuplicatesPage, MergeRequest } from "../../clients/shared/model.ts";
import type { Bookmark } from "./model.ts";

export type { DuplicateGroup, MergeRequest };
export type DuplicatePage = DuplicatesPage;

export const DUPLICATES_PAGE_SIZE = 20;

/** The navigation's count: the groups of the first page, "20+" when there are more pages. */
export function groupCountLabel(page: DuplicatePage): string {
  const n = page.groups.length;
  return page.nextCursor && n > 0 ? `${n}+` : String(n);
}

function savedAt(b: Bookmark): number {
  const at = Date.parse(b.clientSavedAt ?? b.createdAt);
  return Number.isNaN(at) ? Number.POSITIVE_INFINITY : at;
}

/** The member kept unless the person chooses another: the oldest save (the first of equals). */
export function keepDefault(group: DuplicateGroup): string | null {
  let oldest: Bookmark | null = null;
  for (const b of group.bookmarks) if (!oldest || savedAt(b) < savedAt(oldest)) oldest = b;
  return oldest?.clientBookmarkId ?? null;
}

/** When the member was saved: its own save time, else when the server first had it. */
export function savedIso(b: Bookmark): string {
  return b.clientSavedAt ?? b.createdAt;
}

/** What a member is called: its title, else its URL. */
export function memberTitle(b: Bookmark): string {
  return b.title?.trim() || b.url;
}

/** ``POST /v1/duplicates/merge``'s body: ``keep`` and every other member of the group. */
export function mergeRequest(group: DuplicateGroup, keep: string): MergeRequest {
  if (!group.bookmarks.some((b) => b.clientBookmarkId === keep)) throw new Error(`${keep} is not in the group`);
  return { keep, merge: group.bookmarks.map((b) => b.clientBookmarkId).filter((id) => id !== keep) };
}

/** The groups of ``page`` added after ``shown``, each key once. */
export function appendGroups(shown: DuplicateGroup[], page: DuplicateGroup[]): DuplicateGroup[] {
  const seen = new Set(shown.map((g) => g.key));
  return [...shown, ...page.filter((g) => !seen.has(g.key))];
}
