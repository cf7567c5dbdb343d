/** What the background and the content script say to each other about a page's highlights, and how
 * the marks look. No DOM here: the background imports it too. */

import type { DrawItem, PageSelector } from "./highlights.ts";

export const MARK_CLASS = "bookmarks-highlight";

/** The marks' colors, inserted by the background with scripting.insertCSS (no style element in the
 * page's DOM); the text keeps the page's own color. */
export const HIGHLIGHT_CSS = [
  `mark.${MARK_CLASS} { color: inherit; border-radius: 2px; padding: 0; }`,
  `mark.${MARK_CLASS}-yellow { background: #fde68a; }`,
  `mark.${MARK_CLASS}-green { background: #bbf7d0; }`,
  `mark.${MARK_CLASS}-blue { background: #bfdbfe; }`,
  `mark.${MARK_CLASS}-pink { background: #fbcfe8; }`,
  `mark.${MARK_CLASS}-purple { background: #ddd6fe; }`,
].join("\n");

/** The background's requests to the content script (runtime messaging only: the page can neither read
 * nor send these). */
export type PageRequest = { type: "ping" } | { type: "selection" } | { type: "draw"; items: DrawItem[] };

export type SelectionReply = { selector: PageSelector } | { problem: string };

export interface DrawReply {
  /** The keys of the drawn items, in the order of their place on the page. */
  found: number[];
  missing: number[];
}
