/** What the popup, the context menu and the keyboard shortcut do, shared by all three. */

import type { ApiClient, Bookmark, BookmarkWrite } from "./api.ts";
import type { Captured } from "./capture.ts";
import { ApiError, OfflineError, describeError } from "./errors.ts";
import type { LookupCache } from "./lookups.ts";
import type { WriteQueue } from "./queue.ts";
import { saveProblem } from "./server.ts";

export interface ActionDeps {
  api: ApiClient;
  queue: WriteQueue;
  lookups: LookupCache;
  capture: (tabId: number) => Promise<Captured>;
  newId: () => string;
  now: () => Date;
}

export interface SaveRequest {
  url: string;
  title?: string;
  tags?: string[];
  collectionIds?: string[];
  /** The tab showing the page: its rendered HTML is captured after the save. None for a link. */
  tabId?: number;
}

export type CaptureResult = "captured" | "too-large" | "unavailable" | "not-asked" | "failed";

export interface SaveOutcome {
  state: "saved" | "queued";
  id: string;
  bookmark: Bookmark | null;
  capture: CaptureResult;
  message: string;
}

export class CannotSave extends Error {}

export async function save(deps: ActionDeps, request: SaveRequest): Promise<SaveOutcome> {
  const problem = saveProblem(request.url);
  if (problem) throw new CannotSave(problem);
  const existing = await knownBookmark(deps, request.url);
  const id = existing?.clientBookmarkId ?? deps.newId();
  const body = writeOf(request, existing ? null : deps.now());
  let bookmark: Bookmark;
  try {
    bookmark = await deps.api.putBookmark(id, body);
  } catch (error) {
    if (!(error instanceof OfflineError)) throw error;
    await deps.queue.add({ kind: "put", id, body });
    return { state: "queued", id, bookmark: null, capture: "not-asked", message: QUEUED };
  }
  deps.lookups.set(request.url, bookmark);
  const capture = request.tabId === undefined ? { result: "not-asked" as const } : await captureInto(deps, bookmark, request.tabId);
  return { state: "saved", id, bookmark, capture: capture.result, message: capture.message ?? SAVED };
}

export async function update(deps: ActionDeps, id: string, request: SaveRequest): Promise<SaveOutcome> {
  const body = writeOf(request, null);
  try {
    const bookmark = await deps.api.putBookmark(id, body);
    deps.lookups.set(request.url, bookmark);
    return { state: "saved", id, bookmark, capture: "not-asked", message: "Changes saved." };
  } catch (error) {
    if (!(error instanceof OfflineError)) throw error;
    await deps.queue.add({ kind: "put", id, body });
    return { state: "queued", id, bookmark: null, capture: "not-asked", message: QUEUED };
  }
}

export async function remove(deps: ActionDeps, id: string, url: string): Promise<"deleted" | "queued"> {
  deps.lookups.forget(url, id);
  try {
    await deps.api.deleteBookmark(id);
  } catch (error) {
    if (!(error instanceof OfflineError)) throw error;
    await deps.queue.add({ kind: "delete", id });
    return "queued";
  }
  deps.lookups.set(url, null);
  return "deleted";
}

/** The cached or looked-up bookmark of this page; unknown (offline, signed out) counts as not saved. */
export async function knownBookmark(deps: ActionDeps, url: string): Promise<Bookmark | null> {
  const cached = deps.lookups.get(url);
  if (cached !== undefined) return cached;
  const stamp = deps.lookups.stamp();
  try {
    return deps.lookups.settle(url, await deps.api.lookup(url), stamp);
  } catch {
    return null;
  }
}

const SAVED = "Saved.";
const QUEUED = "You're offline. Saved here; it will be sent when you're back online.";

function writeOf(request: SaveRequest, savedAt: Date | null): BookmarkWrite {
  const body: BookmarkWrite = { url: request.url };
  if (request.title) body.title = request.title.slice(0, 1000);
  if (request.tags) body.userTags = request.tags;
  if (request.collectionIds) body.collectionIds = request.collectionIds;
  if (savedAt) body.clientSavedAt = savedAt.toISOString();
  return body;
}

async function captureInto(
  deps: ActionDeps,
  bookmark: Bookmark,
  tabId: number,
): Promise<{ result: CaptureResult; message?: string }> {
  const captured = await deps.capture(tabId);
  if ("skipped" in captured) {
    const why = captured.skipped === "too-large" ? "the page is too large to keep a copy" : "this page can't be read";
    return { result: captured.skipped, message: `Saved, but ${why}.` };
  }
  const title = bookmark.title ?? undefined;
  try {
    await deps.api.capture({
      clientBookmarkId: bookmark.clientBookmarkId,
      url: bookmark.url,
      html: captured.html,
      ...(title ? { title } : {}),
    });
  } catch (error) {
    return { result: "failed", message: `Saved, but the page copy was not kept: ${captureProblem(error)}` };
  }
  return { result: "captured", message: "Saved with a copy of the page as you see it." };
}

function captureProblem(error: unknown): string {
  if (error instanceof ApiError && error.code === "consent-required") {
    return "turn on AI enrichment in the app's settings.";
  }
  return describeError(error);
}
