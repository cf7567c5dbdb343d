// The page: header (quick add, search, sync state), the sidebar, the list, and the panels over them.

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Device } from "../app.ts";
import { checkTagInput, checkTags, tagKey } from "../../../clients/shared/tags.ts";
import { isBroken } from "../links.ts";
import type { LocalBookmark, SearchResult } from "../model.ts";
import { QueryError, compile, parseQuery, positiveWords } from "../query.ts";
import { pauseMessage } from "../quota.ts";
import { shortcutAllowed } from "../shortcuts.ts";
import { urlProblem, withScheme } from "../urls.ts";
import { BulkBar, SelectAllMatching } from "./Bulk.tsx";
import { CollectionBar } from "./CollectionBar.tsx";
import { Icon, plural } from "./common.tsx";
import { Details } from "./Details.tsx";
import { Help } from "./Help.tsx";
import { ImportExport } from "./ImportExport.tsx";
import { JoinForm } from "./Join.tsx";
import { BookmarkList, type Row, openDetails, toggleSelection } from "./List.tsx";
import { Reader } from "./Reader.tsx";
import { Settings } from "./Settings.tsx";
import { Sidebar, buildTree, flatten } from "./Sidebar.tsx";
import { DuplicatesView } from "./Duplicates.tsx";
import { HighlightsView } from "./Highlights.tsx";
import { TrashView } from "./Trash.tsx";
import { type Filter, setUi, subscribeUi, ui, useSubscription } from "./state.ts";

const SEARCH_DELAY_MS = 120;

function SyncStatus({ device }: { device: Device }) {
  useSubscription(device.sync.subscribe.bind(device.sync));
  const waiting = device.store.queue.length;
  const offline = device.sync.state === "offline";
  let text = "Synced";
  if (waiting) text = `${offline ? "Offline · " : ""}${plural(waiting, "change", "changes")} waiting`;
  else if (offline) text = "Offline";
  else if (device.sync.state === "syncing") text = "Syncing…";
  else if (device.sync.state === "error") text = "Sync paused";
  return (
    // Named "Sync" (what the region is), described by its text (what it says), so a label never hides the text.
    <div
      class={`sync sync-${offline ? "offline" : waiting ? "waiting" : device.sync.state}`}
      role="status"
      aria-label="Sync"
      aria-describedby="sync-state"
    >
      <Icon name="cloud" />
      <span id="sync-state" title={device.sync.lastError ?? undefined}>
        {text}
      </span>
    </div>
  );
}

function QuickAdd({ device }: { device: Device }) {
  const [url, setUrl] = useState("");
  const [title, setTitle] = useState("");
  const [tags, setTags] = useState("");
  const [collection, setCollection] = useState("");
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const existing = url.trim() ? device.store.findByUrl(withScheme(url)) : undefined;
  const collections = flatten(buildTree(device.store.collections()));
  const submit = async (event: Event) => {
    event.preventDefault();
    const full = withScheme(url);
    const problem = urlProblem(full);
    if (problem) {
      setError(problem);
      return;
    }
    // Tags the server would refuse are explained here, and nothing is saved until they are fixed.
    const typed = checkTagInput(tags);
    if (typed.tags === null) {
      setError(typed.error);
      setMore(true);
      return;
    }
    const extraTags = typed.tags;
    const merged = existing && extraTags.length ? checkTags([...existing.userTags, ...extraTags]) : null;
    if (merged && merged.tags === null) {
      setError(merged.error);
      setMore(true);
      return;
    }
    setError(null);
    // Cleared at once, not after the write: a link typed while the previous one is being stored stays.
    setUrl("");
    setTitle("");
    setTags("");
    if (existing) {
      await device.save(existing.clientBookmarkId, {
        ...(title.trim() ? { title: title.trim() } : {}),
        ...(merged?.tags ? { userTags: merged.tags } : {}),
        ...(collection && !existing.collectionIds.includes(collection) ? { collectionIds: [...existing.collectionIds, collection] } : {}),
      });
      device.toast("Already saved. It's updated and open.");
      setUi({ detailsId: existing.clientBookmarkId, query: "" });
    } else {
      await device.add(full, {
        ...(title.trim() ? { title: title.trim().slice(0, 1000) } : {}),
        ...(extraTags.length ? { userTags: extraTags } : {}),
        ...(collection ? { collectionIds: [collection] } : {}),
      });
    }
  };
  return (
    <form class="quick-add" onSubmit={submit} aria-label="Add a link">
      <div class="quick-row">
        <label for="add-url" class="sr-only">
          URL
        </label>
        <input
          id="add-url"
          type="text"
          inputMode="url"
          autoComplete="off"
          spellcheck={false}
          placeholder="Paste a link to save it"
          value={url}
          aria-describedby="add-status"
          onInput={(e) => setUrl(e.currentTarget.value)}
        />
        <button type="submit" class="primary">
          Save
        </button>
        <button type="button" class="small ghost" aria-expanded={more} onClick={() => setMore(!more)}>
          More
        </button>
      </div>
      <p id="add-status" class={error ? "error-text" : existing ? "already" : "sr-only"} aria-live="polite">
        {error ?? (existing ? `Already saved: ${existing.title || existing.url}` : "")}
      </p>
      {more && (
        <div class="quick-more">
          <label>
            Title <input value={title} maxLength={1000} onInput={(e) => setTitle(e.currentTarget.value)} />
          </label>
          <label>
            Tags <input value={tags} placeholder="comma, separated" aria-describedby="add-status" onInput={(e) => setTags(e.currentTarget.value)} />
          </label>
          <label>
            Collection
            <select value={collection} onChange={(e) => setCollection(e.currentTarget.value)}>
              <option value="">None</option>
              {collections.map(({ collection: c, depth }) => (
                <option key={c.id} value={c.id}>
                  {"  ".repeat(depth - 1) + c.name}
                </option>
              ))}
            </select>
          </label>
        </div>
      )}
    </form>
  );
}

function inFilter(filter: Filter): (b: LocalBookmark) => boolean {
  switch (filter.kind) {
    case "favorites":
      return (b) => b.isFavorite;
    case "archived":
      return (b) => b.isArchived;
    case "broken":
      return isBroken;
    case "collection":
      return (b) => b.collectionIds.includes(filter.id);
    case "tag": {
      const key = tagKey(filter.tag);
      return (b) => b.userTags.some((t) => tagKey(t) === key);
    }
    default:
      return (b) => !b.isArchived;
  }
}

function useSearch(device: Device, query: string): { rows: Row[] | null; error: string | null; words: string[] } {
  const [server, setServer] = useState<{ query: string; results: SearchResult[] } | null>(null);
  const [serverError, setServerError] = useState<string | null>(null);
  const trimmed = query.trim();
  let local: { rows: Row[]; words: string[] } | null = null;
  let error: string | null = null;
  if (trimmed) {
    try {
      const terms = parseQuery(trimmed);
      const highlighted = new Set(device.store.highlights().filter((h) => !h.deleted).map((h) => h.bookmarkId));
      const match = compile(terms, { highlighted });
      local = { rows: device.store.list().filter(match).map((bookmark) => ({ bookmark, snippet: null })), words: positiveWords(terms) };
    } catch (e) {
      error = e instanceof QueryError ? e.message : String(e);
    }
  }
  useEffect(() => {
    setServerError(null);
    if (!trimmed || error || !navigator.onLine) return;
    const controller = new AbortController();
    const timer = window.setTimeout(() => {
      device.search(trimmed, controller.signal).then(
        (results) => setServer({ query: trimmed, results }),
        (e: unknown) => {
          if (!controller.signal.aborted && e instanceof Error && "code" in e) setServerError(e.message);
        },
      );
    }, SEARCH_DELAY_MS);
    return () => {
      controller.abort();
      window.clearTimeout(timer);
    };
  }, [trimmed, device.store.version]);
  if (!trimmed) return { rows: null, error: null, words: [] };
  if (error || !local) return { rows: [], error, words: [] };
  if (server && server.query === trimmed && navigator.onLine) {
    const rows: Row[] = [];
    const seen = new Set<string>();
    for (const r of server.results) {
      const view = device.store.get(r.bookmark.clientBookmarkId) ?? r.bookmark;
      if ((view as LocalBookmark).deleted) continue;
      seen.add(view.clientBookmarkId);
      rows.push({ bookmark: view, snippet: r.snippet });
    }
    // Local writes the server has not seen yet still match locally.
    const pending = device.store.pendingIds();
    for (const row of local.rows) if (pending.has(row.bookmark.clientBookmarkId) && !seen.has(row.bookmark.clientBookmarkId)) rows.unshift(row);
    return { rows, error: serverError, words: local.words };
  }
  return { rows: local.rows, error: serverError, words: local.words };
}

function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));
}

function useShortcuts(device: Device, rows: Row[]) {
  const latest = useRef(rows);
  latest.current = rows;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      // Single keys only while this device's shortcuts are on (Settings, "Keyboard shortcuts").
      if (!shortcutAllowed(event)) return;
      if (event.key === "Escape") {
        // A dialog closes itself (over the Reader, Escape closes the dialog only).
        if (ui.readerId && (event.target as Element | null)?.closest?.("dialog")) return;
        if (ui.readerId) setUi({ readerId: null });
        else if (ui.detailsId) setUi({ detailsId: null });
        else if (ui.query) setUi({ query: "" });
        else if (ui.selection.size) setUi({ selection: new Set(), selectionQuery: null });
        return;
      }
      if (isTyping(event.target) || ui.dialog || ui.readerId) return;
      const rows = latest.current;
      const active = rows[ui.active];
      const focusRow = (index: number) => {
        const next = Math.max(0, Math.min(rows.length - 1, index));
        setUi({ active: next });
        requestAnimationFrame(() => document.querySelector<HTMLElement>(`li[data-index="${next}"]`)?.focus());
      };
      switch (event.key) {
        case "n":
          document.getElementById("add-url")?.focus();
          break;
        case "/":
          document.getElementById("search")?.focus();
          break;
        case "?":
          setUi({ dialog: "help" });
          break;
        case "j":
          focusRow(ui.active + 1);
          break;
        case "k":
          focusRow(ui.active - 1);
          break;
        case "Enter":
        case "o":
          if (!active || (event.key === "Enter" && (event.target as HTMLElement).closest("a,button"))) return;
          openDetails(active.bookmark.clientBookmarkId, ui.active);
          break;
        case "x":
          if (active) toggleSelection(rows, ui.active, event.shiftKey);
          break;
        case "f":
          if (active) void device.save(active.bookmark.clientBookmarkId, { isFavorite: !active.bookmark.isFavorite });
          break;
        case "e":
          if (active) void device.save(active.bookmark.clientBookmarkId, { isArchived: !active.bookmark.isArchived });
          break;
        case "r":
          if (active) setUi({ readerId: active.bookmark.clientBookmarkId });
          break;
        default:
          return;
      }
      event.preventDefault();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
}

function Toasts({ device }: { device: Device }) {
  useSubscription(device.subscribeToasts.bind(device));
  return (
    <div class="toasts" role="region" aria-label="Notifications" aria-live="polite">
      {device.toasts.map((t) => (
        <div class="toast" key={t.id}>
          <span>{t.text}</span>
          {t.undo && (
            <button
              type="button"
              onClick={() => {
                t.undo?.();
                device.dismiss(t.id);
              }}
            >
              Undo
            </button>
          )}
        </div>
      ))}
    </div>
  );
}

/** The one notice of a paused automatic enrichment, until the person closes it. */
function EnrichNotice({ device }: { device: Device }) {
  useSubscription(device.autoEnrich.subscribe.bind(device.autoEnrich));
  const pause = device.autoEnrich.notice;
  return (
    <div class="notice-area" role="status">
      {pause && (
        <div class="notice">
          <span>{pauseMessage(pause)}</span>
          <button type="button" class="small" onClick={() => void device.autoEnrich.dismissNotice()}>
            OK
          </button>
        </div>
      )}
    </div>
  );
}

function Welcome({ device }: { device: Device }) {
  return (
    <main class="welcome">
      <h1>Bookmarks</h1>
      <p>You're signed out. Your library is safe on the server for any device that is still paired.</p>
      <button type="button" class="primary" onClick={() => void device.startNew()}>
        Start a new library
      </button>
      <h2>Join with a code</h2>
      <p class="hint">On a device that has your library, open Settings and choose “Pair a device”.</p>
      <JoinForm device={device} />
    </main>
  );
}

function title(filter: Filter, device: Device): string {
  switch (filter.kind) {
    case "favorites":
      return "Favorites";
    case "archived":
      return "Archived";
    case "trash":
      return "Trash";
    case "duplicates":
      return "Duplicates";
    case "broken":
      return "Broken links";
    case "highlights":
      return "Highlights";
    case "collection":
      return device.store.collections().find((c) => c.id === filter.id)?.name ?? "Collection";
    case "tag":
      return `Tag: ${filter.tag}`;
    default:
      return "All bookmarks";
  }
}

function emptyText(searching: boolean, anything: boolean, filter: Filter): string {
  if (searching) return "Nothing matches. Try fewer words.";
  if (filter.kind === "broken") return "No broken links. Links are checked about once a month; any that stop working show up here.";
  return anything ? "Nothing here yet." : "Your library is empty. Paste a link above to save it.";
}

export function App({ device }: { device: Device }) {
  useSubscription(subscribeUi);
  useSubscription(device.store.subscribe.bind(device.store));
  useSubscription(device.subscribeSession.bind(device));
  useSubscription(device.previews.subscribe.bind(device.previews));
  const [menu, setMenu] = useState(false);
  const all = device.store.list();
  const filtered = useMemo(() => all.filter(inFilter(ui.filter)).map((bookmark) => ({ bookmark, snippet: null })), [all, ui.filter]);
  // The view "Highlights" filters its own list with the search box.
  const inHighlights = ui.filter.kind === "highlights";
  const search = useSearch(device, inHighlights ? "" : ui.query);
  const inTrash = ui.filter.kind === "trash" && !search.rows;
  const inDuplicates = ui.filter.kind === "duplicates" && !search.rows;
  const rows = inTrash || inDuplicates || inHighlights ? [] : (search.rows ?? filtered);
  useShortcuts(device, rows);
  useEffect(() => setMenu(false), [ui.filter, ui.dialog]);

  if (device.signedOut) return <Welcome device={device} />;
  const details = ui.detailsId ? device.store.get(ui.detailsId) : undefined;
  const reading = ui.readerId ? device.store.get(ui.readerId) : undefined;
  const collection = ui.filter.kind === "collection" ? device.store.collections().find((c) => c.id === (ui.filter as { id: string }).id) : undefined;
  const heading = search.rows ? `Results for “${ui.query.trim()}”` : title(ui.filter, device);
  return (
    <div class={`shell${details && !details.deleted ? " with-details" : ""}${menu ? " menu-open" : ""}`}>
      <a class="skip" href="#main">
        Skip to the list
      </a>
      <header class="topbar">
        <button type="button" class="icon-button menu-button" aria-label="Menu" aria-expanded={menu} onClick={() => setMenu(!menu)}>
          <Icon name="menu" />
        </button>
        <a class="brand" href="#/all" aria-label="Bookmarks, all">
          <img src="/app/icon.svg" alt="" width={28} height={28} />
          <span>Bookmarks</span>
        </a>
        <QuickAdd device={device} />
        <div class="search">
          <label for="search" class="sr-only">
            Search
          </label>
          <input
            id="search"
            type="search"
            placeholder="Search  (try tag:news or is:unread)"
            value={ui.query}
            autoComplete="off"
            onInput={(e) => setUi({ query: e.currentTarget.value, active: -1 })}
          />
        </div>
        <SyncStatus device={device} />
        <button type="button" class="icon-button" aria-label="Keyboard shortcuts help" onClick={() => setUi({ dialog: "help" })}>
          ?
        </button>
        <button type="button" class="icon-button" aria-label="Settings" onClick={() => setUi({ dialog: "settings" })}>
          <Icon name="settings" />
        </button>
      </header>
      <Sidebar device={device} all={all} />
      <main id="main" class="main" tabIndex={-1}>
        {inHighlights ? (
          <HighlightsView device={device} query={ui.query} />
        ) : inTrash ? (
          <TrashView device={device} />
        ) : inDuplicates ? (
          <DuplicatesView device={device} />
        ) : (
          <>
            <div class="list-head">
              <h1>{heading}</h1>
              <span class="list-count">{plural(rows.length, "bookmark", "bookmarks")}</span>
              {collection && !search.rows && <CollectionBar key={collection.id} device={device} collection={collection} />}
              {search.rows && search.rows.length > 0 && ui.selection.size === 0 && <SelectAllMatching rows={search.rows} />}
            </div>
            <EnrichNotice device={device} />
            {search.error && (
              <p class="error-text search-error" role="alert">
                {search.error}
              </p>
            )}
            {ui.selection.size > 0 && <BulkBar device={device} rows={rows} />}
            <BookmarkList
              rows={rows}
              device={device}
              words={search.words}
              label="Bookmarks"
              empty={emptyText(search.rows !== null, all.length > 0, ui.filter)}
            />
          </>
        )}
      </main>
      {details && !details.deleted && <Details key={details.clientBookmarkId} device={device} bookmark={details} />}
      {reading && <Reader device={device} bookmark={reading} />}
      {ui.dialog === "settings" && <Settings device={device} onClose={() => setUi({ dialog: null })} />}
      {ui.dialog === "help" && <Help onClose={() => setUi({ dialog: null })} />}
      {ui.dialog === "import" && <ImportExport device={device} onClose={() => setUi({ dialog: null })} />}
      <Toasts device={device} />
    </div>
  );
}
