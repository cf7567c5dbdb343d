/** The toolbar popup: save the current tab with tags and a collection, or edit and delete it once saved. */

import type { SaveOutcome, SaveRequest } from "./lib/actions.ts";
import type { Bookmark } from "./lib/api.ts";
import type { CollectionChoice } from "./lib/collections.ts";
import { byId } from "./lib/dom.ts";
import { type HighlightLine, type PageHighlights, colorName, highlightsHeading } from "./lib/highlights.ts";
import { ask, type PageState } from "./lib/messages.ts";
import { queuedLine } from "./lib/queue.ts";
import { isSaveableUrl, originPattern } from "./lib/server.ts";
import { InvalidTags, formatTags, parseTagInput } from "../../../clients/shared/tags.ts";

const $ = byId;
const form = $<HTMLFormElement>("form");
const titleInput = $<HTMLInputElement>("title");
const tagsInput = $<HTMLInputElement>("tags");
const collectionSelect = $<HTMLSelectElement>("collection");
const saveButton = $<HTMLButtonElement>("save");
const deleteButton = $<HTMLButtonElement>("delete");

let tab: chrome.tabs.Tab | undefined;
/** What the popup shows of the page's bookmark: the server's, or the one just queued offline. */
type ShownBookmark = Pick<Bookmark, "clientBookmarkId" | "url" | "title" | "userTags" | "collectionIds">;

let saved: ShownBookmark | null = null;

async function targetTab(): Promise<chrome.tabs.Tab | undefined> {
  // Opened as a page of its own (popup.html?tab=ID), it works on that tab; as a popup, on the active one.
  const id = Number(new URLSearchParams(location.search).get("tab"));
  if (Number.isInteger(id) && id > 0) return chrome.tabs.get(id);
  return (await chrome.tabs.query({ active: true, lastFocusedWindow: true }))[0];
}

function status(text: string, kind: "ok" | "error" | "" = ""): void {
  const element = $("status");
  element.textContent = text;
  element.className = kind;
}

function fillCollections(choices: CollectionChoice[], selected: string | undefined): void {
  collectionSelect.replaceChildren(new Option("No collection", ""));
  for (const choice of choices) collectionSelect.add(new Option(choice.label, choice.id));
  if (selected && !choices.some((c) => c.id === selected)) collectionSelect.add(new Option(selected, selected));
  collectionSelect.value = selected ?? "";
}

function showSaved(bookmark: ShownBookmark | null): void {
  saved = bookmark;
  $("saved-mark").hidden = bookmark === null;
  saveButton.textContent = bookmark ? "Save changes" : "Save page";
  deleteButton.hidden = bookmark === null;
  if (bookmark) {
    titleInput.value = bookmark.title ?? titleInput.value;
    tagsInput.value = formatTags(bookmark.userTags);
  }
}

function showQueued(count: number): void {
  $("queued").hidden = count === 0;
  $("queued").textContent = queuedLine(count);
}

function request(): SaveRequest {
  const collection = collectionSelect.value;
  return {
    url: tab?.url ?? "",
    title: titleInput.value.trim(),
    tags: parseTagInput(tagsInput.value),
    collectionIds: collection ? [collection] : [],
    ...(tab?.id !== undefined ? { tabId: tab.id } : {}),
  };
}

async function onSubmit(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  let body: SaveRequest;
  try {
    body = request();
  } catch (error) {
    if (error instanceof InvalidTags) return status(error.message, "error");
    throw error;
  }
  await busy(saved ? "Saving changes…" : "Saving…", async () => {
    const outcome = saved
      ? await ask<SaveOutcome>({ type: "update", id: saved.clientBookmarkId, request: body })
      : await ask<SaveOutcome>({ type: "save", request: body });
    // A save queued offline is edited under the id it was given, so a second click adds no duplicate.
    showSaved(outcome.bookmark ?? { clientBookmarkId: outcome.id, url: body.url, title: body.title ?? null, userTags: body.tags ?? [], collectionIds: body.collectionIds ?? [] });
    if (outcome.state === "queued") showQueued((await ask<PageState>({ type: "state", url: body.url })).queued);
    status(outcome.message, outcome.capture === "failed" || outcome.capture === "too-large" ? "error" : "ok");
  });
}

async function onDelete(): Promise<void> {
  if (!saved || !tab?.url) return;
  const target = saved;
  await busy("Deleting…", async () => {
    const result = await ask<string>({ type: "delete", id: target.clientBookmarkId, url: tab?.url ?? "", ...(tab?.id !== undefined ? { tabId: tab.id } : {}) });
    showSaved(null);
    $("highlights").hidden = true;
    tagsInput.value = "";
    collectionSelect.value = "";
    status(result === "queued" ? "Deleted here; the server hears of it when you're back online." : "Deleted.", "ok");
  });
}

async function busy(text: string, work: () => Promise<void>): Promise<void> {
  saveButton.disabled = deleteButton.disabled = true;
  status(text);
  try {
    await work();
  } catch (error) {
    status(error instanceof Error ? error.message : String(error), "error");
  } finally {
    saveButton.disabled = deleteButton.disabled = false;
  }
}

/** The page's highlights, as text only (a quote or note is never parsed as markup). */
function showHighlights(page: PageHighlights): void {
  const section = $("highlights");
  section.hidden = page.bookmarkId === null;
  if (page.bookmarkId === null) return;
  const missing = page.lines.filter((line) => line.found === false).length;
  $("highlights-heading").textContent = highlightsHeading(page.lines.length);
  $("highlights-empty").hidden = page.lines.length > 0;
  $("highlights-missing").hidden = missing === 0;
  $("highlights-missing").textContent = `${missing} not found on this page: its text changed.`;
  $("highlight-list").replaceChildren(...page.lines.map(highlightItem));
  $("site-access").hidden = page.siteAccess !== false || page.lines.length === 0;
}

/** The site's access, asked inside the click (the browser's prompt names the site). */
function allowSite(): void {
  if (!tab?.url) return;
  void chrome.permissions.request({ origins: [originPattern(new URL(tab.url).origin)] }).then((granted) => {
    if (granted) $("site-access").hidden = true;
  });
}

function highlightItem(line: HighlightLine): HTMLLIElement {
  const item = document.createElement("li");
  item.className = `swatch-${line.color}${line.found === false ? " missing" : ""}`;
  const quote = document.createElement("p");
  quote.className = "quote";
  quote.textContent = `“${line.quote}”`;
  item.append(quote);
  if (line.note) {
    const note = document.createElement("p");
    note.className = "note";
    note.textContent = line.note;
    item.append(note);
  }
  const meta = document.createElement("p");
  meta.className = "meta";
  meta.textContent = line.found === false ? `${colorName(line.color)} · Not found on this page` : colorName(line.color);
  item.append(meta);
  return item;
}

async function refreshHighlights(): Promise<void> {
  if (!tab?.url) return;
  try {
    showHighlights(await ask<PageHighlights>({ type: "highlights", url: tab.url, ...(tab.id !== undefined ? { tabId: tab.id } : {}) }));
  } catch {
    // Offline or signed out: no list.
  }
}

async function refreshCollections(): Promise<void> {
  try {
    const choices = await ask<CollectionChoice[]>({ type: "collections" });
    fillCollections(choices, collectionSelect.value || saved?.collectionIds[0]);
  } catch {
    // Offline or signed out: the local copy already shown stays.
  }
}

async function main(): Promise<void> {
  $("open-options").addEventListener("click", () => void chrome.runtime.openOptionsPage());
  form.addEventListener("submit", (event) => void onSubmit(event));
  deleteButton.addEventListener("click", () => void onDelete());
  $("allow-site").addEventListener("click", allowSite);
  tab = await targetTab();
  if (!isSaveableUrl(tab?.url)) {
    $("unsaveable").hidden = false;
    return;
  }
  const state = await ask<PageState>({ type: "state", url: tab.url });
  if (!state.signedIn) {
    $("signed-out").hidden = false;
    return;
  }
  $("page-url").textContent = tab.url;
  titleInput.value = tab.title ?? "";
  fillCollections(state.collections, state.bookmark?.collectionIds[0]);
  showSaved(state.bookmark);
  showQueued(state.queued);
  form.hidden = false;
  (state.bookmark ? tagsInput : saveButton).focus();
  void refreshCollections();
  if (state.bookmark) void refreshHighlights();
  if (state.queued > 0) void ask({ type: "flush" }).then(() => ask<PageState>({ type: "state", url: tab?.url ?? "" })).then((s) => showQueued(s.queued));
}

main().catch((error: unknown) => status(error instanceof Error ? error.message : String(error), "error"));
