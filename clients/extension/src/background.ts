/** The extension's background: badge, context menus, keyboard shortcuts, offline queue, highlights on
 * the page, and the work the popup asks for (a save outlives the popup, which closes as soon as it loses focus). */

import { remove, save, update, knownBookmark, type SaveOutcome, type SaveRequest } from "./lib/actions.ts";
import { BADGE_SAVED_COLOR, BADGE_SAVED_TEXT, QUEUE_RETRY_MINUTES } from "./lib/config.ts";
import { describeError } from "./lib/errors.ts";
import type { PageState, Reply, Request } from "./lib/messages.ts";
import { DECLINED_SITES_KEY } from "./lib/highlights.ts";
import { CannotHighlight, type HighlightOutcome, highlightSelection, pageHighlights, redraw } from "./lib/highlighting.ts";
import { isSaveableUrl, originPattern } from "./lib/server.ts";
import { browserServices } from "./lib/services.ts";

const services = browserServices();
const MENU_ID = "save-link";
const HIGHLIGHT_MENU_ID = "highlight-selection";
const MAX_DECLINED_SITES = 200;
const QUEUE_ALARM = "send-queue";

chrome.runtime.onInstalled.addListener(() => {
  chrome.contextMenus.create({ id: MENU_ID, title: "Save link to Bookmarks", contexts: ["link"] });
  chrome.contextMenus.create({ id: HIGHLIGHT_MENU_ID, title: "Highlight", contexts: ["selection"] });
});
// Created once: re-creating it on every wake-up of the worker would push it back each time, and a
// worker woken more often than once a minute would never see it fire.
void chrome.alarms.get(QUEUE_ALARM).then((alarm) => {
  if (!alarm) void chrome.alarms.create(QUEUE_ALARM, { periodInMinutes: QUEUE_RETRY_MINUTES });
});
chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === QUEUE_ALARM) void flushQueue();
});
self.addEventListener("online", () => void flushQueue());

chrome.contextMenus.onClicked.addListener((info, tab) => {
  if (info.menuItemId === HIGHLIGHT_MENU_ID) void highlightTab(tab, true);
  else void saveLink(info, tab);
});
chrome.commands.onCommand.addListener((command, tab) => {
  if (command === "save-page") void savePage(tab);
  if (command === "highlight-selection") void highlightTab(tab, true);
});
chrome.tabs.onActivated.addListener(({ tabId }) => void badgeForTab(tabId));
chrome.tabs.onUpdated.addListener((tabId, change, tab) => {
  if (change.status === "complete" || change.url) void showBadge(tabId, tab.url);
  if (change.status === "complete") void redrawIfAllowed(tabId, tab.url);
});
chrome.runtime.onMessage.addListener((message: Request, sender, reply: (r: Reply<unknown>) => void) => {
  if (sender.id !== chrome.runtime.id) return false;
  handle(message).then(
    (value) => reply({ ok: true, value }),
    (error: unknown) => reply({ ok: false, error: describeError(error) }),
  );
  return true; // the reply comes later
});

async function handle(message: Request): Promise<unknown> {
  switch (message.type) {
    case "state":
      return pageState(message.url);
    case "save":
      return afterSave(message.request, await save(services, message.request));
    case "update":
      return afterSave(message.request, await update(services, message.id, message.request));
    case "delete": {
      const outcome = await remove(services, message.id, message.url);
      if (message.tabId !== undefined) await setBadge(message.tabId, false);
      return outcome;
    }
    case "collections":
      await services.collections.sync(services.api);
      return services.collections.choices();
    case "highlights":
      return { ...(await pageHighlights(services, message.url, message.tabId)), siteAccess: await siteAccess(message.url) };
    case "account-changed":
      services.lookups.clear();
      await services.collections.clear();
      await services.highlights.clear();
      return flushQueue();
    case "flush":
      return flushQueue();
  }
}

async function pageState(url: string): Promise<PageState> {
  const signedIn = (await services.session.account()) !== undefined;
  const bookmark = signedIn && isSaveableUrl(url) ? await knownBookmark(services, url) : null;
  const collections = await services.collections.choices();
  return { signedIn, bookmark, collections, queued: (await services.queue.all()).length };
}

async function afterSave(request: SaveRequest, outcome: SaveOutcome): Promise<SaveOutcome> {
  if (request.tabId !== undefined) await setBadge(request.tabId, outcome.state === "saved");
  return outcome;
}

/** The context menu's handler: saves the link's target (no capture: that page is not open). The badge
 * of the tab flashes the result, then shows that tab's own page again. */
export async function saveLink(info: chrome.contextMenus.OnClickData, tab?: chrome.tabs.Tab): Promise<SaveOutcome | null> {
  if (info.menuItemId !== MENU_ID || !info.linkUrl) return null;
  const linkText = (info as { linkText?: string }).linkText; // Firefox only
  const outcome = await reported(tab?.id, save(services, { url: info.linkUrl, ...(linkText ? { title: linkText } : {}) }));
  if (outcome && tab?.id !== undefined) await flash(tab.id, outcome.state === "saved" ? "+1" : "…", BADGE_SAVED_COLOR);
  return outcome;
}

/** The keyboard shortcut's handler: saves the tab and captures it, like the popup's button. */
export async function savePage(tab?: chrome.tabs.Tab): Promise<SaveOutcome | null> {
  const target = tab?.id !== undefined ? tab : (await chrome.tabs.query({ active: true, lastFocusedWindow: true }))[0];
  if (target?.id === undefined || !isSaveableUrl(target.url)) return null;
  const request: SaveRequest = { url: target.url, tabId: target.id, ...(target.title ? { title: target.title } : {}) };
  const outcome = await reported(target.id, save(services, request));
  if (outcome) await setBadge(target.id, outcome.state === "saved");
  return outcome;
}

/** The "Highlight" menu item's and shortcut's handler: highlights the tab's selection (saving the page
 * first when it is not in the library) and draws it at once. From a person's click or key press it also
 * asks for access to the page's site, so its highlights are drawn again whenever the page loads;
 * declined, they are drawn when the toolbar button is clicked. */
export async function highlightTab(tab?: chrome.tabs.Tab, askForSite = false): Promise<HighlightOutcome | null> {
  // Called before any await: the browser asks for the permission only inside the user's action.
  if (askForSite && isSaveableUrl(tab?.url)) askForSiteAccess(tab.url);
  const target = tab?.id !== undefined ? tab : (await chrome.tabs.query({ active: true, lastFocusedWindow: true }))[0];
  if (target?.id === undefined || !isSaveableUrl(target.url)) return null;
  try {
    if ((await services.session.account()) === undefined) throw new CannotHighlight("Sign in first, in the options.");
    const outcome = await highlightSelection(services, { id: target.id, url: target.url, ...(target.title ? { title: target.title } : {}) });
    if (outcome.savedPage) await setBadge(target.id, true);
    return outcome;
  } catch (error) {
    await flash(target.id, "!", "#b42318", describeError(error));
    return null;
  }
}

// The sites whose access the person declined when asked at a highlight: not asked again from there
// (the popup offers it). Read once per worker start; the request has to be made before any await.
let declinedSites: Set<string> | null = null;
void chrome.storage.local.get(DECLINED_SITES_KEY).then((items) => {
  declinedSites = new Set([...(declinedSites ?? []), ...((items[DECLINED_SITES_KEY] as string[] | undefined) ?? [])]);
});
chrome.permissions.onAdded.addListener(({ origins }) => void allowedSites(origins ?? []));

/** Sites granted since (from the popup, or the browser's settings) are no longer declined. */
async function allowedSites(patterns: string[]): Promise<void> {
  const allowed = new Set(patterns.map((pattern) => pattern.replace(/\/\*$/, "")));
  const stored = ((await chrome.storage.local.get(DECLINED_SITES_KEY))[DECLINED_SITES_KEY] as string[] | undefined) ?? [];
  declinedSites = new Set(stored.filter((origin) => !allowed.has(origin)));
  await chrome.storage.local.set({ [DECLINED_SITES_KEY]: [...declinedSites] });
}

function askForSiteAccess(url: string): void {
  const origin = new URL(url).origin;
  if (declinedSites?.has(origin)) return;
  chrome.permissions.request({ origins: [originPattern(origin)] }).then(
    (granted) => {
      if (granted) return;
      declinedSites = new Set([...(declinedSites ?? []), origin].slice(-MAX_DECLINED_SITES));
      void chrome.storage.local.set({ [DECLINED_SITES_KEY]: [...declinedSites] });
    },
    () => undefined, // outside a user action (the test hooks): the access granted before, if any, stays
  );
}

async function siteAccess(url: string): Promise<boolean> {
  return isSaveableUrl(url) && chrome.permissions.contains({ origins: [originPattern(new URL(url).origin)] });
}

/** A page finished loading: its highlights are drawn when the extension may script its site. */
async function redrawIfAllowed(tabId: number, url: string | undefined): Promise<void> {
  if (!isSaveableUrl(url) || (await services.session.account()) === undefined) return;
  try {
    if (!(await siteAccess(url))) return;
    await redraw(services, tabId, url);
  } catch {
    // The tab closed or navigated meanwhile.
  }
}

/** A save started without the popup: its outcome, or null with the error shown on the tab's badge. */
async function reported(tabId: number | undefined, work: Promise<SaveOutcome>): Promise<SaveOutcome | null> {
  try {
    return await work;
  } catch (error) {
    if (tabId !== undefined) await flash(tabId, "!", "#b42318", describeError(error));
    return null;
  }
}

export async function flushQueue(): Promise<{ sent: number; refused: number; left: number }> {
  const result = await services.queue.flush(services.api);
  if (result.sent > 0) services.lookups.clear();
  return result;
}

async function badgeForTab(tabId: number): Promise<void> {
  try {
    const tab = await chrome.tabs.get(tabId);
    await showBadge(tabId, tab.url);
  } catch {
    // The tab closed meanwhile.
  }
}

async function showBadge(tabId: number, url: string | undefined): Promise<void> {
  if (!isSaveableUrl(url) || (await services.session.account()) === undefined) return setBadge(tabId, false);
  const bookmark = await knownBookmark(services, url);
  await setBadge(tabId, bookmark !== null);
}

async function setBadge(tabId: number, saved: boolean): Promise<void> {
  try {
    await chrome.action.setBadgeText({ tabId, text: saved ? BADGE_SAVED_TEXT : "" });
    await chrome.action.setBadgeBackgroundColor({ tabId, color: BADGE_SAVED_COLOR });
    await chrome.action.setTitle({ tabId, title: saved ? "Saved in Bookmarks" : "Save to Bookmarks" });
  } catch {
    // The tab closed meanwhile.
  }
}

/** A short mark on the badge for a save made from the menu, then the page's own state again. */
async function flash(tabId: number, text: string, color: string, title?: string): Promise<void> {
  try {
    await chrome.action.setBadgeText({ tabId, text });
    await chrome.action.setBadgeBackgroundColor({ tabId, color });
    if (title) await chrome.action.setTitle({ tabId, title });
  } catch {
    return;
  }
  setTimeout(() => void badgeForTab(tabId), 3000);
}

// The handlers, reachable from the worker's console (and the end-to-end test, which cannot click the
// browser's own context menu).
Object.assign(globalThis, { bookmarksExtension: { saveLink, savePage, highlightTab, flushQueue } });
