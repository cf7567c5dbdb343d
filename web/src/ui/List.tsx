// The list "Bookmarks": the library (or the search results) newest first, rendered in a window of
// rows around the scroll position so 10,000 bookmarks scroll as smoothly as 10. Each rendered row
// tells assistive technology the list's whole size and its place in it (aria-setsize, aria-posinset).

import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Device } from "../app.ts";
import { linkBadge } from "../links.ts";
import type { LocalBookmark } from "../model.ts";
import { platformImagePath } from "../preview.ts";
import { highlight, parseSnippet } from "../snippet.ts";
import { Icon, Segments } from "./common.tsx";
import { setUi, ui } from "./state.ts";

export const ROW_HEIGHT = 84;
const OVERSCAN = 4;

export interface Row {
  bookmark: LocalBookmark;
  snippet: string | null;
}

const ENRICHMENT_LABELS: Record<string, string> = {
  pending: "Waiting to enrich",
  processing: "Enriching…",
  retrying: "Enriching (retrying)",
  failed: "Enrichment failed",
};

/** The page's picture when the platform serves it (same origin); any other address gets the letter tile,
 * so the list never makes the browser contact a saved site. */
export function Thumb({ b }: { b: LocalBookmark }) {
  const [broken, setBroken] = useState<string | null>(null);
  const src = platformImagePath(b.thumbnailUrl);
  if (src && broken !== src) {
    return <img class="thumb" src={src} alt="" loading="lazy" onError={() => setBroken(src)} />;
  }
  const letter = (b.domain ?? b.title ?? "?").replace(/^www\./, "").charAt(0).toUpperCase();
  let hue = 0;
  for (const ch of b.domain ?? "") hue = (hue * 31 + ch.charCodeAt(0)) % 360;
  return (
    <span class={`thumb letter hue-${hue % 12}`} aria-hidden="true">
      {letter}
    </span>
  );
}

function RowView(props: { row: Row; index: number; pending: boolean; words: string[]; device: Device; rows: Row[] }) {
  const { bookmark: b, snippet } = props.row;
  const selected = ui.selection.has(b.clientBookmarkId);
  const title = b.title || b.url;
  const fetching = !b.title && props.device.previews.fetching(b.clientBookmarkId);
  const badge = linkBadge(b.linkStatus);
  const onSelect = (event: MouseEvent) => toggleSelection(props.rows, props.index, event.shiftKey);
  return (
    <li
      class={`row${props.index === ui.active ? " active" : ""}${selected ? " selected" : ""}${ui.detailsId === b.clientBookmarkId ? " open" : ""}`}
      style={{ transform: `translateY(${props.index * ROW_HEIGHT}px)` }}
      data-index={props.index}
      data-id={b.clientBookmarkId}
      aria-setsize={props.rows.length}
      aria-posinset={props.index + 1}
      tabIndex={props.index === ui.active ? 0 : -1}
      onFocus={() => ui.active !== props.index && setUi({ active: props.index })}
    >
      <input type="checkbox" class="select" aria-label="Select" checked={selected} onClick={onSelect} />
      <Thumb b={b} />
      <div class="row-main">
        <a class="title" href={b.url} target="_blank" rel="noopener noreferrer">
          <Segments segments={highlight(title, props.words)} />
        </a>
        <div class="meta">
          <span class="domain">{b.domain ?? ""}</span>
          {fetching && <span class="state fetching">Fetching title…</span>}
          {b.isFavorite && <span class="fav" title="Favorite">★<span class="sr-only">Favorite</span></span>}
          {props.pending && <span class="unsynced" title="Not synced yet">Not synced</span>}
          {badge && <span class={`link-badge link-${b.linkStatus}`}>{badge}</span>}
          {ENRICHMENT_LABELS[b.enrichmentStatus] && b.enrichmentStatus !== "pending" && (
            <span class={`state state-${b.enrichmentStatus}`}>{ENRICHMENT_LABELS[b.enrichmentStatus]}</span>
          )}
          {b.userTags.slice(0, 4).map((t) => (
            <span class="tag" key={`u${t}`}>
              {t}
            </span>
          ))}
          {b.tags.slice(0, 3).map((t) => (
            <span class="tag ai" key={`a${t}`} title="Suggested by AI">
              <span aria-hidden="true">✦ </span>
              <span class="sr-only">AI tag </span>
              {t}
            </span>
          ))}
        </div>
        {snippet !== null ? (
          <div class="snippet">
            <Segments segments={parseSnippet(snippet)} />
          </div>
        ) : (
          b.description && <div class="snippet description">{b.description}</div>
        )}
      </div>
      <button type="button" class="icon-button details-button" aria-label="Details" onClick={() => openDetails(b.clientBookmarkId, props.index)}>
        <Icon name="details" />
      </button>
    </li>
  );
}

export function openDetails(id: string, index: number): void {
  setUi({ detailsId: id, active: index });
}

export function toggleSelection(rows: Row[], index: number, range: boolean): void {
  const row = rows[index];
  if (!row) return;
  const id = row.bookmark.clientBookmarkId;
  const selection = new Set(ui.selection);
  const anchorIndex = ui.anchor ? rows.findIndex((r) => r.bookmark.clientBookmarkId === ui.anchor) : -1;
  if (range && anchorIndex >= 0) {
    const [from, to] = anchorIndex < index ? [anchorIndex, index] : [index, anchorIndex];
    for (let i = from; i <= to; i += 1) {
      const r = rows[i];
      if (r) selection.add(r.bookmark.clientBookmarkId);
    }
  } else if (selection.has(id)) selection.delete(id);
  else selection.add(id);
  setUi({ selection, anchor: id, active: index, selectionQuery: null });
}

export function BookmarkList(props: { rows: Row[]; device: Device; words: string[]; label: string; empty: string }) {
  const scroller = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ first: 0, last: 20 });
  const pending = props.device.store.pendingIds();

  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    // Re-render only when the window of rows changes, not on every scrolled pixel.
    const update = () => {
      const first = Math.max(0, Math.floor(el.scrollTop / ROW_HEIGHT) - OVERSCAN);
      const last = Math.ceil((el.scrollTop + el.clientHeight) / ROW_HEIGHT) + OVERSCAN;
      setView((v) => (v.first === first && v.last === last ? v : { first, last }));
    };
    update();
    el.addEventListener("scroll", update, { passive: true });
    const observer = new ResizeObserver(update);
    observer.observe(el);
    return () => {
      el.removeEventListener("scroll", update);
      observer.disconnect();
    };
  }, []);

  // Keep the active row in view and focused when j/k move it.
  useEffect(() => {
    const el = scroller.current;
    if (!el || ui.active < 0) return;
    const top = ui.active * ROW_HEIGHT;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW_HEIGHT - el.clientHeight;
    const row = el.querySelector<HTMLElement>(`li[data-index="${ui.active}"]`);
    if (row && el.contains(document.activeElement) && document.activeElement !== row && !row.contains(document.activeElement)) row.focus();
  });

  const first = Math.min(view.first, props.rows.length);
  const last = Math.min(props.rows.length, view.last);
  const visible = props.rows.slice(first, last);
  return (
    <div class="list-scroll" ref={scroller}>
      {props.rows.length === 0 && <p class="empty">{props.empty}</p>}
      <ul class="list" role="list" aria-label={props.label} style={{ height: `${props.rows.length * ROW_HEIGHT}px` }}>
        {visible.map((row, i) => (
          <RowView
            key={row.bookmark.clientBookmarkId}
            row={row}
            index={first + i}
            pending={pending.has(row.bookmark.clientBookmarkId)}
            words={props.words}
            device={props.device}
            rows={props.rows}
          />
        ))}
      </ul>
    </div>
  );
}
