/** Highlights: a local copy of the user's highlights kept current from the delta stream, the PUT body made
 * from a selection, and what the popup lists.
 *
 * The copy lives in the background's storage.local only; the page's content script is handed one
 * bookmark's selectors when it draws them and keeps nothing. The stored cursor is the one of the last
 * request, so the next sync replays that page (harmless) and goes on with what is newer.
 */

import { HIGHLIGHT_COLORS } from "../../../../clients/shared/model.ts";
import type { ApiClient, Highlight, HighlightColor, HighlightWrite } from "./api.ts";
import { DELTA_PAGE_LIMIT } from "./config.ts";
import type { KeyValue, LockRunner } from "./kv.ts";

const KEY = "highlights";
const LOCK = "bookmarks-highlights";

/** storage.local: the sites whose access the person declined when asked at a highlight. */
export const DECLINED_SITES_KEY = "declinedSites";

export const COLORS: readonly HighlightColor[] = HIGHLIGHT_COLORS;
export const DEFAULT_COLOR: HighlightColor = "yellow";

/** A selection's selector as the content script reports it: up to 64 code points of context each side. */
export interface PageSelector {
  quote: string;
  prefix: string;
  suffix: string;
}

/** What the content script needs to draw one highlight: nothing but its selector, its color and an index. */
export interface DrawItem {
  key: number;
  quote: string;
  prefix: string;
  suffix: string;
  color: HighlightColor;
}

/** One line of the popup's list. */
export interface HighlightLine {
  id: string;
  quote: string;
  note: string;
  color: HighlightColor;
  /** Drawn on the page (true), not found in its text (false), or unknown (the tab could not be read). */
  found: boolean | null;
}

export interface PageHighlights {
  bookmarkId: string | null;
  lines: HighlightLine[];
  /** The extension may draw on the page's site when it loads (asked for at a highlight, or in the popup). */
  siteAccess?: boolean;
}

/** "Yellow", for the popup's list. */
export function colorName(color: HighlightColor): string {
  return color.charAt(0).toUpperCase() + color.slice(1);
}

export function highlightsHeading(count: number): string {
  return `Highlights (${count})`;
}

interface HighlightCopy {
  cursor: string | null;
  items: Record<string, Highlight>;
}

/** The PUT body of a new highlight of ``bookmarkId``. The offsets are left out: the live page's text is
 * not the server's readable text, so offsets in it would mislead the server's tie-break. */
export function highlightWrite(bookmarkId: string, selector: PageSelector, color: HighlightColor = DEFAULT_COLOR): HighlightWrite {
  return { bookmarkId, quote: selector.quote, prefix: selector.prefix, suffix: selector.suffix, color };
}

/** The record kept locally until the server's answer (or a delta page) replaces it. */
export function localHighlight(id: string, write: HighlightWrite, now: Date): Highlight {
  const at = now.toISOString();
  return {
    id,
    bookmarkId: write.bookmarkId,
    quote: write.quote,
    prefix: write.prefix ?? "",
    suffix: write.suffix ?? "",
    start: null,
    end: null,
    color: write.color ?? DEFAULT_COLOR,
    note: write.note ?? "",
    anchor: null,
    createdAt: at,
    updatedAt: at,
  };
}

/** The draw list of ``highlights``: each keyed by its index, so no id reaches the page's process. */
export function drawItems(highlights: readonly Highlight[]): DrawItem[] {
  return highlights.map((h, key) => ({ key, quote: h.quote, prefix: h.prefix, suffix: h.suffix, color: h.color }));
}

/** The popup's lines: the drawn ones in page order, then the ones not found, then (unknown) the rest. */
export function linesOf(highlights: readonly Highlight[], drawn: { found: number[]; missing: number[] } | null): HighlightLine[] {
  const line = (h: Highlight, found: boolean | null): HighlightLine => ({ id: h.id, quote: h.quote, note: h.note, color: h.color, found });
  if (!drawn) return highlights.map((h) => line(h, null));
  const pick = (keys: number[], found: boolean) =>
    keys.flatMap((key) => (highlights[key] ? [line(highlights[key], found)] : []));
  return [...pick(drawn.found, true), ...pick(drawn.missing, false)];
}

export class HighlightStore {
  private readonly local: KeyValue;
  private readonly lock: LockRunner;

  constructor(local: KeyValue, lock: LockRunner) {
    this.local = local;
    this.lock = lock;
  }

  /** Applies every delta page newer than the stored cursor. */
  sync(api: ApiClient): Promise<void> {
    return this.lock(LOCK, async () => {
      const copy = await this.load();
      let cursor = copy.cursor;
      for (;;) {
        const page = await api.delta(cursor, DELTA_PAGE_LIMIT);
        for (const highlight of page.highlights ?? []) copy.items[highlight.id] = pick(highlight);
        for (const tombstone of page.highlightTombstones ?? []) delete copy.items[tombstone.id];
        copy.cursor = page.nextCursor ?? cursor;
        await this.local.set(KEY, copy);
        if (page.nextCursor === null) return;
        cursor = page.nextCursor;
      }
    });
  }

  /** Keeps ``highlight`` (a local one, or the server's answer to its PUT). */
  put(highlight: Highlight): Promise<void> {
    return this.lock(LOCK, async () => {
      const copy = await this.load();
      copy.items[highlight.id] = pick(highlight);
      await this.local.set(KEY, copy);
    });
  }

  remove(id: string): Promise<void> {
    return this.lock(LOCK, async () => {
      const copy = await this.load();
      delete copy.items[id];
      await this.local.set(KEY, copy);
    });
  }

  /** The bookmark's highlights, oldest first. */
  async of(bookmarkId: string): Promise<Highlight[]> {
    const { items } = await this.load();
    return Object.values(items)
      .filter((h) => h.bookmarkId === bookmarkId)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  async clear(): Promise<void> {
    await this.local.remove(KEY);
  }

  private async load(): Promise<HighlightCopy> {
    return (await this.local.get<HighlightCopy>(KEY)) ?? { cursor: null, items: {} };
  }
}

function pick(h: Highlight): Highlight {
  return {
    id: h.id,
    bookmarkId: h.bookmarkId,
    quote: h.quote,
    prefix: h.prefix ?? "",
    suffix: h.suffix ?? "",
    start: h.start ?? null,
    end: h.end ?? null,
    color: COLORS.includes(h.color) ? h.color : DEFAULT_COLOR,
    note: h.note ?? "",
    anchor: h.anchor ?? null,
    createdAt: h.createdAt,
    updatedAt: h.updatedAt,
  };
}
