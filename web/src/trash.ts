// The trash's wire shapes and what the view says of them. The calls (online only) are Device's, in app.ts:
// a restore reaches this device like any other change, through delta; a purge changes nothing a device keeps.

import type { TrashItem, TrashPage } from "../../clients/shared/model.ts";

export type { TrashItem, TrashPage };

export const TRASH_PAGE_SIZE = 50;

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "3 Dec" in the device's time zone; the year too when it is not the year of ``now``. */
export function shortDate(iso: string, now: Date = new Date()): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return "an unknown day";
  const day = `${at.getDate()} ${MONTHS[at.getMonth()]}`;
  return at.getFullYear() === now.getFullYear() ? day : `${day} ${at.getFullYear()}`;
}

/** "Deleted 3 Dec · gone for good on 2 Jan": when it went to the trash, and when it leaves it. */
export function trashLine(item: Pick<TrashItem, "deletedAt" | "purgeAt">, now: Date = new Date()): string {
  return `Deleted ${shortDate(item.deletedAt, now)} · gone for good on ${shortDate(item.purgeAt, now)}`;
}

/** What a trashed bookmark is called: its title, else its URL. */
export function trashTitle(item: TrashItem): string {
  return item.bookmark.title?.trim() || item.bookmark.url;
}

/** Whole days a bookmark stays in the trash (from an item's two dates), or null when they make no sense. */
export function retentionDays(item: Pick<TrashItem, "deletedAt" | "purgeAt">): number | null {
  const days = Math.round((Date.parse(item.purgeAt) - Date.parse(item.deletedAt)) / 86_400_000);
  return Number.isFinite(days) && days > 0 ? days : null;
}

/** The items of ``page`` added after ``shown``, each bookmark once (a restore between pages moves the cursor's ground). */
export function appendPage(shown: TrashItem[], page: TrashItem[]): TrashItem[] {
  const seen = new Set(shown.map((i) => i.bookmark.clientBookmarkId));
  return [...shown, ...page.filter((i) => !seen.has(i.bookmark.clientBookmarkId))];
}
