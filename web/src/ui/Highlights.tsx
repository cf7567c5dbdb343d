// Highlights: the dialog "Highlight" (note, color, delete) and the view "Highlights" (every highlight,
// newest first, filtered by the search box on this device). Quotes, notes and titles are text only.

import { useEffect, useState } from "preact/hooks";
import type { Device } from "../app.ts";
import { HIGHLIGHT_COLORS, type HighlightColor, type LocalHighlight } from "../model.ts";
import { fold } from "../query.ts";
import { plural } from "./common.tsx";
import { Dialog } from "./Dialog.tsx";
import { setUi } from "./state.ts";

export const COLOR_NAMES: Record<HighlightColor, string> = {
  yellow: "Yellow",
  green: "Green",
  blue: "Blue",
  pink: "Pink",
  purple: "Purple",
};

/** A color the drawing and the styles know (anything else shows as yellow). */
export function knownColor(color: string): HighlightColor {
  return (HIGHLIGHT_COLORS as readonly string[]).includes(color) ? (color as HighlightColor) : "yellow";
}

const MAX_NOTE = 10_000;

export function HighlightDialog(props: { device: Device; highlight: LocalHighlight; onClose: () => void }) {
  const { device, highlight: h } = props;
  const [note, setNote] = useState(h.note);
  // The choice shows at once: the store's copy follows a moment later, and a render in between (another
  // change of the library) must not put the old color back under the pointer.
  const [color, setColor] = useState(knownColor(h.color));
  useEffect(() => setColor(knownColor(h.color)), [h.color]);
  const change = async (fields: { note?: string; color?: HighlightColor }) => {
    await device.store.putHighlight(h.id, { bookmarkId: h.bookmarkId, quote: h.quote, ...fields });
    device.sync.kick();
  };
  const remove = async () => {
    props.onClose();
    await device.store.deleteHighlight(h.id);
    device.sync.kick();
    device.toast("Highlight deleted.");
  };
  return (
    <Dialog id="highlight" title="Highlight" onClose={props.onClose}>
      <blockquote class={`highlight-quote hl-${color}`}>{h.quote}</blockquote>
      <label class="stacked" for="highlight-note">
        Note
      </label>
      <textarea
        id="highlight-note"
        rows={4}
        maxLength={MAX_NOTE}
        value={note}
        placeholder="Add a thought about this passage"
        onInput={(e) => {
          const value = e.currentTarget.value;
          setNote(value);
          void change({ note: value });
        }}
      />
      <fieldset class="colors" role="radiogroup" aria-labelledby="highlight-color">
        <legend id="highlight-color">Color</legend>
        {HIGHLIGHT_COLORS.map((c) => (
          <label key={c} class={`color-choice${c === color ? " on" : ""}`}>
            <input
              type="radio"
              name="highlight-color"
              value={c}
              checked={c === color}
              onChange={() => {
                setColor(c);
                void change({ color: c });
              }}
            />
            <span class={`swatch hl-${c}`} aria-hidden="true" />
            {COLOR_NAMES[c]}
          </label>
        ))}
      </fieldset>
      <div class="actions dialog-actions highlight-actions">
        <button type="button" class="danger" onClick={() => void remove()}>
          Delete highlight
        </button>
        <button type="button" onClick={props.onClose}>
          Done
        </button>
      </div>
    </Dialog>
  );
}

/** Whether every word of ``query`` is in the highlight's quote, note or its bookmark's title. */
export function matchesHighlight(query: string, h: LocalHighlight, title: string): boolean {
  const haystack = fold(`${h.quote}\n${h.note}\n${title}`);
  return fold(query)
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => haystack.includes(word));
}

export function HighlightsView(props: { device: Device; query: string }) {
  const { device } = props;
  const query = props.query.trim();
  const titled = device.store.highlights().map((h) => {
    const b = device.store.get(h.bookmarkId);
    return { h, title: b?.title || b?.url || "Untitled" };
  });
  const shown = query ? titled.filter(({ h, title }) => matchesHighlight(query, h, title)) : titled;
  return (
    <>
      <div class="list-head">
        <h1>{query ? `Highlights matching “${query}”` : "Highlights"}</h1>
        <span class="list-count">{plural(shown.length, "highlight", "highlights")}</span>
      </div>
      <div class="trash-scroll">
        {shown.length === 0 && (
          <p class="empty">{query ? "No highlight matches. Try fewer words." : "No highlights yet. Select text in the Reader and choose “Highlight”."}</p>
        )}
        <ul class="highlight-list" aria-label="Highlights">
          {shown.map(({ h, title }) => (
            <li key={h.id} class="highlight-item">
              <blockquote class={`highlight-quote hl-${knownColor(h.color)}`}>{h.quote}</blockquote>
              {h.note && <p class="highlight-note">{h.note}</p>}
              <a
                class="highlight-source"
                href={`#/highlights`}
                onClick={(e) => {
                  e.preventDefault();
                  setUi({ readerId: h.bookmarkId, readerHighlight: h.id });
                }}
              >
                {title}
              </a>
            </li>
          ))}
        </ul>
      </div>
    </>
  );
}
