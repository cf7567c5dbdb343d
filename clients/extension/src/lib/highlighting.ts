/** What the "Highlight" menu item, its shortcut and the popup do with a page's highlights, run by the
 * background. The page is reached through a PageChannel: the content script in the browser, a fake in
 * unit tests. */

import { type ActionDeps, knownBookmark, save } from "./actions.ts";
import type { Highlight } from "./api.ts";
import { ApiError, OfflineError } from "./errors.ts";
import { type HighlightStore, type PageHighlights, drawItems, highlightWrite, linesOf, localHighlight } from "./highlights.ts";
import { type DrawReply, HIGHLIGHT_CSS, type PageRequest, type SelectionReply } from "./marks.ts";
import { isSaveableUrl } from "./server.ts";

export interface PageChannel {
  /** The content script's answer in the tab's top frame; it is injected first when it is not there. */
  ask<T>(tabId: number, request: PageRequest): Promise<T>;
}

export interface HighlightDeps extends ActionDeps {
  highlights: HighlightStore;
  page: PageChannel;
}

export class CannotHighlight extends Error {}

export interface HighlightOutcome {
  state: "saved" | "queued";
  id: string;
  bookmarkId: string;
  /** The page was not in the library: it was saved (and captured) first. */
  savedPage: boolean;
  drawn: boolean;
}

export interface TabInfo {
  id: number;
  url: string;
  title?: string;
}

/** Highlights the tab's selection: saves the page first when it is not saved, keeps the highlight
 * locally, PUTs it (or queues it behind the writes already waiting), and draws the page's highlights. */
export async function highlightSelection(deps: HighlightDeps, tab: TabInfo): Promise<HighlightOutcome> {
  if (!isSaveableUrl(tab.url)) throw new CannotHighlight("Only web pages (http or https) can be highlighted.");
  const selection = await deps.page.ask<SelectionReply>(tab.id, { type: "selection" });
  if ("problem" in selection) throw new CannotHighlight(selection.problem);
  let bookmarkId = (await knownBookmark(deps, tab.url))?.clientBookmarkId;
  const savedPage = bookmarkId === undefined;
  if (bookmarkId === undefined) {
    const request = { url: tab.url, tabId: tab.id, ...(tab.title ? { title: tab.title } : {}) };
    bookmarkId = (await save(deps, request)).id;
  }
  const id = deps.newId();
  const write = highlightWrite(bookmarkId, selection.selector);
  await deps.highlights.put(localHighlight(id, write, deps.now()));
  let state: HighlightOutcome["state"] = "saved";
  const queue = async (): Promise<void> => {
    state = "queued";
    try {
      await deps.queue.add({ kind: "highlight-put", id, body: write });
    } catch (error) {
      await deps.highlights.remove(id); // refused (the queue is full): nothing kept that will not be sent
      throw error;
    }
  };
  if ((await deps.queue.all()).length > 0) {
    await queue(); // behind the bookmark's own queued PUT, or any write still waiting
  } else {
    try {
      await deps.highlights.put(await deps.api.putHighlight(id, write));
    } catch (error) {
      if (!(error instanceof OfflineError)) {
        await deps.highlights.remove(id);
        throw error;
      }
      await queue();
    }
  }
  const highlights = await deps.highlights.of(bookmarkId);
  const drawn = await drawOn(deps, tab.id, highlights);
  const index = highlights.findIndex((h) => h.id === id);
  return { state, id, bookmarkId, savedPage, drawn: drawn?.found.includes(index) ?? false };
}

/** Draws ``highlights`` in the tab; null when the tab cannot be reached. */
export async function drawOn(deps: HighlightDeps, tabId: number, highlights: readonly Highlight[]): Promise<DrawReply | null> {
  try {
    return await deps.page.ask<DrawReply>(tabId, { type: "draw", items: drawItems(highlights) });
  } catch {
    return null;
  }
}

/** The highlights of the page's bookmark, freshly synced when the server can be reached, drawn in the
 * tab when one is given (and reachable): for the popup, which says which were not found on the page. */
export async function pageHighlights(deps: HighlightDeps, url: string, tabId?: number): Promise<PageHighlights> {
  const bookmark = isSaveableUrl(url) ? await knownBookmark(deps, url) : null;
  if (!bookmark) return { bookmarkId: null, lines: [] };
  await syncQuietly(deps);
  const highlights = await deps.highlights.of(bookmark.clientBookmarkId);
  const drawn = tabId === undefined || highlights.length === 0 ? null : await drawOn(deps, tabId, highlights);
  return { bookmarkId: bookmark.clientBookmarkId, lines: linesOf(highlights, drawn) };
}

/** A page loaded again: its bookmark's highlights drawn from the local copy at once, then drawn again
 * when a sync (the other devices' changes) changed what the page shows. Returns what was drawn last. */
export async function redraw(deps: HighlightDeps, tabId: number, url: string): Promise<DrawReply | null> {
  const bookmark = await knownBookmark(deps, url);
  if (!bookmark) return null;
  const before = await deps.highlights.of(bookmark.clientBookmarkId);
  const drawn = before.length === 0 ? null : await drawOn(deps, tabId, before);
  await syncQuietly(deps);
  const after = await deps.highlights.of(bookmark.clientBookmarkId);
  if (JSON.stringify(drawItems(after)) === JSON.stringify(drawItems(before))) return drawn;
  const redrawn = await drawOn(deps, tabId, after); // none left: drawing nothing removes the marks
  return after.length === 0 ? null : redrawn;
}

async function syncQuietly(deps: HighlightDeps): Promise<void> {
  try {
    await deps.highlights.sync(deps.api);
  } catch (error) {
    if (!(error instanceof OfflineError) && !(error instanceof ApiError)) throw error;
    // Offline, or a refused sync: the local copy is drawn.
  }
}

/** The browser's PageChannel: a runtime message to the content script of the tab's top frame, after
 * injecting it and the marks' stylesheet (activeTab or the page's host permission) when it does not
 * answer a ping. Requests to one tab run one after another, so it is injected once per document. */
export function tabChannel(): PageChannel {
  const queues = new Map<number, Promise<unknown>>();
  const send = <T>(tabId: number, request: PageRequest) => chrome.tabs.sendMessage(tabId, request, { frameId: 0 }) as Promise<T>;
  const ensure = async (tabId: number): Promise<void> => {
    try {
      if ((await send<string>(tabId, { type: "ping" })) === "pong") return;
    } catch {
      // No content script in this document yet.
    }
    await chrome.scripting.executeScript({ target: { tabId }, files: ["highlighter.js"] });
    await chrome.scripting.insertCSS({ target: { tabId }, css: HIGHLIGHT_CSS });
  };
  return {
    ask<T>(tabId: number, request: PageRequest): Promise<T> {
      const previous = queues.get(tabId) ?? Promise.resolve();
      const run = previous.catch(() => undefined).then(async () => {
        await ensure(tabId);
        return send<T>(tabId, request);
      });
      queues.set(tabId, run.catch(() => undefined));
      return run;
    },
  };
}
