// The region "Reader": the saved page's text in a sandboxed frame, with size, width and theme.

import { useEffect, useState } from "preact/hooks";
import type { Device } from "../app.ts";
import type { LocalBookmark } from "../model.ts";
import { type ReaderSettings, readerDocument } from "../readable.ts";
import { authed } from "../session.ts";
import { Icon } from "./common.tsx";
import { setUi } from "./state.ts";

const SETTINGS_KEY = "reader-settings";

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

export function Reader({ device, bookmark: b }: { device: Device; bookmark: LocalBookmark }) {
  const [html, setHtml] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [settings, setSettings] = useState(loadSettings);
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
  const close = () => setUi({ readerId: null });
  return (
    <section class="reader" aria-label="Reader" onKeyDown={(e) => e.key === "Escape" && (e.stopPropagation(), close())}>
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
        <iframe
          class="reader-frame"
          title={`Saved copy of ${b.title || b.url}`}
          sandbox="allow-same-origin allow-popups allow-popups-to-escape-sandbox"
          referrerpolicy="no-referrer"
          srcdoc={readerDocument(html, b.url, b.title || b.url, css, settings)}
        />
      )}
    </section>
  );
}
