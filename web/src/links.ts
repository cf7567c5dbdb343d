// Link health (docs/api-guide.md, section 15): what the app says of a bookmark's server-written link
// status, the Wayback Machine address of its saved date, and which links count as broken. The call
// ("Check now", online only) is Device's, in app.ts; its result reaches this device through delta.

import type { Bookmark, BookmarkFields, LinkStatus } from "./model.ts";

type LinkFields = Pick<Bookmark, "linkStatus" | "linkCheckedAt">;

/** Gone and unreachable links: the ones the list "Broken links" shows (as the search filter is:broken). */
export function isBroken(b: Pick<Bookmark, "linkStatus">): boolean {
  return b.linkStatus === "gone" || b.linkStatus === "unreachable";
}

/** The row's badge: "Link broken" for gone and unreachable links, "Moved" for moved ones, else none. */
export function linkBadge(status: LinkStatus | null | undefined): string | null {
  if (status === "gone" || status === "unreachable") return "Link broken";
  if (status === "moved") return "Moved";
  return null;
}

const WORDS: Record<LinkStatus, string> = {
  ok: "works",
  moved: "moved",
  gone: "not found",
  blocked: "blocked for robots — may work in a browser",
  unreachable: "not reachable",
};

/** A status in plain words ("works", "not found"...). */
export function linkStatusWords(status: LinkStatus): string {
  return WORDS[status];
}

/** "3 days ago", "just now"...: how long before ``now`` the time ``iso`` was (null for no time). */
export function timeAgo(iso: string, now: Date = new Date()): string | null {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return null;
  const minutes = Math.floor(Math.max(0, now.getTime() - at) / 60_000);
  const unit = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"} ago`;
  if (minutes < 1) return "just now";
  if (minutes < 60) return unit(minutes, "minute");
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return unit(hours, "hour");
  const days = Math.floor(hours / 24);
  if (days < 60) return unit(days, "day");
  if (days < 730) return unit(Math.floor(days / 30), "month");
  return unit(Math.floor(days / 365), "year");
}

/** The Details line: "Link checked 3 days ago: works", or that the link was not checked yet. */
export function linkCheckedLine(b: LinkFields, now: Date = new Date()): string {
  if (!b.linkStatus) return "Link not checked yet.";
  const when = b.linkCheckedAt ? timeAgo(b.linkCheckedAt, now) : null;
  return `Link checked${when ? ` ${when}` : ""}: ${linkStatusWords(b.linkStatus)}`;
}

/**
 * The write of "Use new address": ``url`` = ``linkMovedTo`` (null when the link did not move). A new URL
 * makes the server forget what it knew of the old page, title and description included; the page only
 * moved, so the ones shown go with the write.
 */
export function moveFields(b: Pick<Bookmark, "linkStatus" | "linkMovedTo" | "title" | "description" | "thumbnailUrl">): BookmarkFields | null {
  if (b.linkStatus !== "moved" || !b.linkMovedTo) return null;
  return {
    url: b.linkMovedTo,
    ...(b.title ? { title: b.title } : {}),
    ...(b.description ? { description: b.description } : {}),
    ...(b.thumbnailUrl ? { thumbnailUrl: b.thumbnailUrl } : {}),
  };
}

/** ``YYYYMMDD`` of a timestamp, in UTC; null for no date. */
export function utcDay(iso: string): string | null {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return null;
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(at.getUTCFullYear(), 4)}${pad(at.getUTCMonth() + 1)}${pad(at.getUTCDate())}`;
}

/** The Wayback Machine's copy of the page nearest the day it was saved (``clientSavedAt``, else ``createdAt``). */
export function waybackUrl(b: Pick<Bookmark, "url" | "clientSavedAt" | "createdAt">): string {
  const day = utcDay(b.clientSavedAt ?? b.createdAt);
  return day ? `https://web.archive.org/web/${day}/${b.url}` : `https://web.archive.org/web/${b.url}`;
}

export const CHECK_OFFLINE_TEXT = "You're offline. Check the link when you're back online.";

/** What "Check now" says when the server refused it with ``status`` (null: no words of our own, use the
 * server's message). A bookmark saved a moment ago is unknown to the checker for a moment (404). */
export function checkRefusedText(status: number, retryAfter: number | null): string | null {
  if (status === 429) {
    const wait = retryAfter && retryAfter > 1 ? `${Math.ceil(retryAfter)} seconds` : "a moment";
    return `That's a lot of checks in a minute. Try again in ${wait}.`;
  }
  if (status === 404) return "This link can't be checked yet. Try again in a moment.";
  return null;
}
