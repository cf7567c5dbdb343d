// The region "Reader": the saved page's text in a sandboxed frame, with size, width and theme, and the
// person's highlights. The frame runs no script; the app's own code, which the frame's same origin lets
// reach its document, draws the highlights as <mark> elements around text nodes, follows the selection
// and listens for clicks and keys there (docs/decisions/0144-highlights-in-the-reader.md).

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { MAX_QUOTE, TextMap, type TextSelector, anchorAll, codePointLength, selectorAt, unwrapAll, wrapText } from "../anchoring.ts";
import type { Device } from "../app.ts";
import type { LocalBookmark, LocalHighlight } from "../model.ts";
import { type ReaderSettings, readerDocument } from "../readable.ts";
import { shortcutAllowed } from "../shortcuts.ts";
import { authed } from "../session.ts";
import { Icon } from "./common.tsx";
import { HighlightDialog, knownColor } from "./Highlights.tsx";
import { setUi, ui } from "./state.ts";

const SETTINGS_KEY = "reader-settings";
const MARK = "mark[data-highlight]";

function loadSettings(): ReaderSettings {
  try {
    return { size: "m", width: "narrow", theme: "light", ...(JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? "{}") as Partial<ReaderSettings>) };
  } catch {
    return { size: "m", width: "narrow", theme: "light" };
  }
}

function Choice<T extends string>(props: { label: string; value: T; options: [T, string][]; onChange: (v: T) => void }) {
  return (
    <fieldset class="segmented">
      <legend>{props.label}</legend>
      {props.options.map(([value, text]) => (
        <label key={value} class={props.value === value ? "on" : ""}>
          <input type="radio" name={`reader-${props.label}`} checked={props.value === value} onChange={() => props.onChange(value)} />
          {text}
        </label>
      ))}
    </fieldset>
  );
}

/** The highlights' marks drawn afresh in ``article``; returns the ids of those it could not place. */
function drawHighlights(article: Element, highlights: LocalHighlight[]): string[] {
  const doc = article.ownerDocument;
  unwrapAll(article, MARK);
  const anchors = anchorAll(new TextMap(article).text, highlights);
  const orphans: string[] = [];
  highlights.forEach((h, i) => {
    const found = anchors[i];
    if (!found || found.start === null || found.end === null) {
      orphans.push(h.id);
      return;
    }
    // Each highlight splits text nodes: the next one maps the text afresh (the text itself is unchanged).
    wrapText(new TextMap(article), found.start, found.end, (index) => {
      const mark = doc.createElement("mark");
      mark.className = `hl hl-${knownColor(h.color)}`;
      mark.dataset.highlight = h.id;
      // One stop of the Tab key per highlight, on its first part.
      mark.tabIndex = index === 0 ? 0 : -1;
      if (h.note) mark.title = h.note;
      return mark;
    });
  });
  return orphans;
}

interface Pending {
  selector: TextSelector;
  top: number;
  left: number;
}

/** The selection in the frame as a highlight to make, with where its button goes; null without one. */
function pendingOf(doc: Document, article: Element, frame: HTMLIFrameElement): Pending | null {
  const selection = doc.getSelection();
  if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return null;
  const range = selection.getRangeAt(0);
  const map = new TextMap(article);
  const offsets = map.offsetsOf(range);
  const selector = offsets ? selectorAt(map.text, offsets[0], offsets[1]) : null;
  if (!selector) return null;
  const rect = range.getBoundingClientRect();
  return {
    selector,
    top: Math.max(4, Math.min(frame.clientHeight - 48, rect.bottom + 8)),
    left: Math.max(8, Math.min(frame.clientWidth - 130, rect.left + rect.width / 2 - 55)),
  };
}

export function Reader({ device, bookmark: b }: { device: Device; bookmark: LocalBookmark }) {
  const [html, setHtml] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [settings, setSettings] = useState(loadSettings);
  const [loaded, setLoaded] = useState(0);
  const [pending, setPending] = useState<Pending | null>(null);
  const [orphanIds, setOrphanIds] = useState<string[]>([]);
  const [openId, setOpenId] = useState<string | null>(null);
  const frame = useRef<HTMLIFrameElement>(null);
  const highlights = device.store.highlightsOf(b.clientBookmarkId);
  // What the marks show: a change of anything else (a note being typed) does not redraw them.
  const drawn = highlights.map((h) => `${h.id}:${h.color}:${h.note.length > 0}`).join(",");
  useEffect(() => {
    let live = true;
    setHtml(null);
    setError(null);
    authed(device.session, `/v1/enrichment/snapshot?clientBookmarkId=${encodeURIComponent(b.clientBookmarkId)}&kind=html`)
      .then(async (response) => {
        if (!live) return;
        if (response.status === 404) setError("There's no saved copy of this page yet. Enrich it to save one.");
        else if (!response.ok) setError("The saved copy could not be loaded.");
        else setHtml(await response.text());
      })
      .catch(() => live && setError("You're offline. The saved copy opens when you're back online."));
    if (!b.lastOpenedAt) void device.save(b.clientBookmarkId, { lastOpenedAt: new Date().toISOString() });
    return () => {
      live = false;
    };
  }, [b.clientBookmarkId]);
  const update = (patch: Partial<ReaderSettings>) => {
    const next = { ...settings, ...patch };
    localStorage.setItem(SETTINGS_KEY, JSON.stringify(next));
    setSettings(next);
  };
  const css = document.querySelector<HTMLMetaElement>('meta[name="reader-css"]')?.content ?? "";
  const srcdoc = useMemo(
    () => (html === null ? "" : readerDocument(html, b.url, b.title || b.url, css, settings)),
    [html, b.url, b.title, css, settings],
  );
  const close = () => setUi({ readerId: null });
  const article = (): Element | null => frame.current?.contentDocument?.querySelector("article") ?? null;

  const create = async () => {
    const chosen = latest.current.pending;
    if (!chosen) return;
    if (codePointLength(chosen.selector.quote) > MAX_QUOTE) {
      device.toast("That's a lot of text. A highlight holds up to 5,000 characters.");
      return;
    }
    await device.store.putHighlight(crypto.randomUUID(), { bookmarkId: b.clientBookmarkId, ...chosen.selector, color: "yellow", note: "" });
    device.sync.kick();
    frame.current?.contentDocument?.getSelection()?.removeAllRanges();
    setPending(null);
  };
  const latest = useRef({ highlights, pending, create });
  latest.current = { highlights, pending, create };

  // Every (re)load of the frame (the settings rebuild its document) gets the app's listeners again.
  const onFrameLoad = () => {
    const doc = frame.current?.contentDocument;
    if (!doc) return;
    const follow = () => {
      const root = article();
      setPending(root && frame.current ? pendingOf(doc, root, frame.current) : null);
    };
    doc.addEventListener("selectionchange", follow);
    doc.defaultView?.addEventListener("scroll", follow, { passive: true });
    doc.addEventListener("click", (event) => {
      const mark = (event.target as Element | null)?.closest?.(MARK) as HTMLElement | null;
      if (mark && doc.getSelection()?.isCollapsed !== false) setOpenId(mark.dataset.highlight ?? null);
    });
    doc.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const mark = (event.target as Element | null)?.closest?.(MARK) as HTMLElement | null;
      if (mark && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        setOpenId(mark.dataset.highlight ?? null);
      } else if (event.key === "h" && latest.current.pending && shortcutAllowed(event)) {
        event.preventDefault();
        void latest.current.create();
      } else if (event.key === "Escape") {
        close();
      }
    });
    setLoaded((n) => n + 1);
  };

  useEffect(() => {
    const root = article();
    if (!root) return;
    setOrphanIds(drawHighlights(root, latest.current.highlights));
    if (ui.readerHighlight) {
      const mark = root.querySelector<HTMLElement>(`${MARK}[data-highlight="${CSS.escape(ui.readerHighlight)}"]`);
      mark?.scrollIntoView({ block: "center" });
      mark?.focus({ preventScroll: true });
      setUi({ readerHighlight: null });
    }
  }, [loaded, drawn]);

  const orphans = highlights.filter((h) => orphanIds.includes(h.id));
  const open = openId ? device.store.highlight(openId) : undefined;
  useEffect(() => {
    if (openId && (!open || open.deleted)) setOpenId(null);
  }, [openId, open?.deleted]);

  return (
    <section
      class="reader"
      aria-label="Reader"
      onKeyDown={(e) => {
        if ((e.target as Element).closest("dialog")) return;
        if (e.key === "Escape") {
          e.stopPropagation();
          close();
        } else if (e.key === "h" && pending && !e.ctrlKey && !e.metaKey && !e.altKey && shortcutAllowed(e)) {
          e.preventDefault();
          void create();
        }
      }}
    >
      <header class="reader-bar">
        <button type="button" class="icon-button" aria-label="Close reader" onClick={close} autoFocus>
          <Icon name="close" />
        </button>
        <h2 class="reader-title">{b.title || b.url}</h2>
        <Choice label="Size" value={settings.size} options={[["s", "S"], ["m", "M"], ["l", "L"], ["xl", "XL"]]} onChange={(size) => update({ size })} />
        <Choice label="Width" value={settings.width} options={[["narrow", "Narrow"], ["wide", "Wide"]]} onChange={(width) => update({ width })} />
        <Choice
          label="Theme"
          value={settings.theme}
          options={[["light", "Light"], ["sepia", "Sepia"], ["dark", "Dark"]]}
          onChange={(theme) => update({ theme })}
        />
      </header>
      {error && <p class="reader-message">{error}</p>}
      {!error && html === null && <p class="reader-message">Opening the saved copy…</p>}
      {html !== null && (
        <div class="reader-body">
          <iframe
            ref={frame}
            class="reader-frame"
            title={`Saved copy of ${b.title || b.url}`}
            sandbox="allow-same-origin allow-popups allow-popups-to-escape-sandbox"
            referrerpolicy="no-referrer"
            srcdoc={srcdoc}
            onLoad={onFrameLoad}
          />
          {pending && (
            <button
              type="button"
              class="primary highlight-button"
              style={{ top: `${pending.top}px`, left: `${pending.left}px` }}
              onMouseDown={(e) => e.preventDefault()}
              onClick={() => void create()}
              aria-keyshortcuts="h"
            >
              Highlight
            </button>
          )}
        </div>
      )}
      {html !== null && orphans.length > 0 && (
        <section class="reader-orphans" aria-labelledby="orphans-heading">
          <h3 id="orphans-heading">Not found on the page any more</h3>
          <ul aria-labelledby="orphans-heading">
            {orphans.map((h) => (
              <li key={h.id}>
                <button type="button" class="link-button orphan-quote" onClick={() => setOpenId(h.id)}>
                  {h.quote}
                </button>
                {h.note && <p class="highlight-note">{h.note}</p>}
              </li>
            ))}
          </ul>
        </section>
      )}
      {open && !open.deleted && <HighlightDialog key={open.id} device={device} highlight={open} onClose={() => setOpenId(null)} />}
    </section>
  );
}
