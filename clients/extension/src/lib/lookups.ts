/** Recent lookup answers per page URL, so switching tabs does not ask the server every time. */

import type { Bookmark } from "./api.ts";
import { LOOKUP_CACHE_ENTRIES, LOOKUP_TTL_MS } from "./config.ts";

interface Entry {
  bookmark: Bookmark | null;
  at: number;
}

export class LookupCache {
  private readonly entries = new Map<string, Entry>();

  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** The cached answer (a bookmark, or null for "not saved"), or undefined when unknown or stale. */
  get(url: string): Bookmark | null | undefined {
    const entry = this.entries.get(url);
    if (!entry) return undefined;
    if (this.now() - entry.at >= LOOKUP_TTL_MS) {
      this.entries.delete(url);
      return undefined;
    }
    return entry.bookmark;
  }

  set(url: string, bookmark: Bookmark | null): void {
    this.entries.delete(url);
    this.entries.set(url, { bookmark, at: this.now() });
    while (this.entries.size > LOOKUP_CACHE_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  /** Forgets every answer about this bookmark's page, under whichever URL it was asked. */
  forget(url: string, id?: string): void {
    this.entries.delete(url);
    if (id === undefined) return;
    for (const [key, entry] of this.entries) {
      if (entry.bookmark?.clientBookmarkId === id) this.entries.delete(key);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}
