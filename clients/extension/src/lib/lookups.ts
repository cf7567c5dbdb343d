/** Recent lookup answers per page URL, so switching tabs does not ask the server every time.
 *
 * What the extension itself did (a save, an edit, a delete) outranks a lookup answer that was already on
 * its way: an answer is kept only when nothing was set or forgotten since its request left (see
 * ``stamp`` and ``settle``), so a lookup racing a save cannot mark the saved page "not saved". */

import type { Bookmark } from "./api.ts";
import { LOOKUP_CACHE_ENTRIES, LOOKUP_TTL_MS } from "./config.ts";

interface Entry {
  bookmark: Bookmark | null;
  at: number;
}

export class LookupCache {
  private readonly entries = new Map<string, Entry>();

  private readonly now: () => number;

  /** Counts the extension's own sets, forgets and clears. */
  private changes = 0;

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
    this.changes += 1;
    this.store(url, bookmark);
  }

  /** Taken before a lookup request; ``settle`` keeps its answer only if the cache has not changed since. */
  stamp(): number {
    return this.changes;
  }

  /** Keeps a lookup answer asked at ``stamp`` unless the extension's own writes came after; returns
   * what the cache says now (the newer knowledge wins). */
  settle(url: string, bookmark: Bookmark | null, stamp: number): Bookmark | null {
    if (stamp === this.changes) {
      this.store(url, bookmark);
      return bookmark;
    }
    const known = this.get(url);
    return known === undefined ? bookmark : known;
  }

  private store(url: string, bookmark: Bookmark | null): void {
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
    this.changes += 1;
    this.entries.delete(url);
    if (id === undefined) return;
    for (const [key, entry] of this.entries) {
      if (entry.bookmark?.clientBookmarkId === id) this.entries.delete(key);
    }
  }

  clear(): void {
    this.changes += 1;
    this.entries.clear();
  }
}
