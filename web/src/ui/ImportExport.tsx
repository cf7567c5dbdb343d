// Import (any supported export file, with a progress bar and every item's outcome) and export links.

import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, errorOf } from "../api.ts";
import type { Device } from "../app.ts";
import type { ImportItem, ImportRecord } from "../model.ts";
import { authed } from "../session.ts";
import { Dialog } from "./Dialog.tsx";

const POLL_MS = 500;
const SHOWN_ITEMS = 500;
const OUTCOME_LABELS: Record<ImportItem["outcome"], string> = {
  created: "Added",
  updated: "Merged",
  unchanged: "Already there",
  invalid: "Skipped",
};

function ExportLink(props: { device: Device; format: string; label: string; extension: string }) {
  const download = async (event: MouseEvent) => {
    event.preventDefault();
    try {
      const response = await authed(props.device.session, `/v1/exports?format=${props.format}`);
      if (!response.ok) throw await errorOf(response);
      const url = URL.createObjectURL(await response.blob());
      const a = document.createElement("a");
      a.href = url;
      a.download = `bookmarks-${new Date().toISOString().slice(0, 10)}.${props.extension}`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (error) {
      props.device.toast(error instanceof ApiError ? error.message : "You're offline. Exports need a connection.");
    }
  };
  return (
    <a href={`/v1/exports?format=${props.format}`} onClick={download}>
      {props.label}
    </a>
  );
}

export function ImportExport(props: { device: Device; onClose: () => void }) {
  const { device } = props;
  const input = useRef<HTMLInputElement>(null);
  const [record, setRecord] = useState<ImportRecord | null>(null);
  const [items, setItems] = useState<ImportItem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [uploading, setUploading] = useState(false);
  const live = useRef(true);
  useEffect(
    () => () => {
      live.current = false;
    },
    [],
  );

  const poll = async (id: string) => {
    while (live.current) {
      const current = (await device.json<{ data: ImportRecord }>(`/v1/imports/${encodeURIComponent(id)}`)).data;
      setRecord(current);
      if (current.status === "completed" || current.status === "failed") break;
      await new Promise((r) => window.setTimeout(r, POLL_MS));
    }
    const response = await authed(device.session, `/v1/imports/${encodeURIComponent(id)}/report`);
    if (response.ok) {
      const lines = (await response.text()).split("\n").filter(Boolean).slice(0, SHOWN_ITEMS);
      setItems(lines.map((line) => JSON.parse(line) as ImportItem));
    }
    device.sync.wake();
  };

  const upload = async (file: File) => {
    setError(null);
    setItems([]);
    setRecord(null);
    setUploading(true);
    try {
      const body = new FormData();
      body.append("file", file);
      const response = await authed(device.session, "/v1/imports", { method: "POST", body });
      if (!response.ok) throw await errorOf(response);
      const created = ((await response.json()) as { data: ImportRecord }).data;
      setRecord(created);
      setUploading(false);
      await poll(created.id);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "You're offline. Importing needs a connection.");
    } finally {
      setUploading(false);
    }
  };

  const total = record?.total ?? null;
  const done = record?.status === "completed" || record?.status === "failed";
  return (
    <Dialog id="import" title="Import & export" onClose={props.onClose} wide>
      <section aria-labelledby="i-import">
        <h3 id="i-import">Import</h3>
        <p>
          Bring links from a browser bookmark file, Pocket, Instapaper, Raindrop, Omnivore or a previous export. Links you already have are
          merged, not duplicated.
        </p>
        <input
          ref={input}
          type="file"
          class="sr-only"
          tabIndex={-1}
          aria-hidden="true"
          accept=".html,.htm,.csv,.json,.zip,text/html,text/csv,application/json,application/zip"
          onChange={(e) => {
            const file = e.currentTarget.files?.[0];
            if (file) void upload(file);
            e.currentTarget.value = "";
          }}
        />
        <button type="button" onClick={() => input.current?.click()} disabled={uploading || (record !== null && !done)}>
          Import
        </button>
        {uploading && <p>Uploading…</p>}
        {record && (
          <div class="import-status">
            <progress aria-label="Import progress" max={total ?? 1} value={total === null ? undefined : record.processed} />
            <p aria-live="polite">
              {record.status === "queued" && "Waiting to start…"}
              {record.status === "running" && (total === null ? "Reading the file…" : `${record.processed} of ${total} done`)}
              {record.status === "completed" &&
                `Done: ${record.created} added, ${record.updated} merged, ${record.unchanged} already there, ${record.invalid} skipped.`}
              {record.status === "failed" && `The import failed: ${record.error ?? "the file could not be read."}`}
            </p>
          </div>
        )}
        {error && (
          <p class="error-text" role="alert">
            {error}
          </p>
        )}
        {items.length > 0 && (
          <table class="import-items">
            <caption>Every item of the file</caption>
            <thead>
              <tr>
                <th scope="col">Line</th>
                <th scope="col">Link</th>
                <th scope="col">Result</th>
              </tr>
            </thead>
            <tbody>
              {items.map((item) => (
                <tr key={item.line} class={`outcome-${item.outcome}`}>
                  <td>{item.line}</td>
                  <td class="url">{item.url}</td>
                  <td>
                    {OUTCOME_LABELS[item.outcome]}
                    {item.reason ? `: ${item.reason}` : ""}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="i-export">
        <h3 id="i-export">Export</h3>
        <p>Download your whole library.</p>
        <ul class="export-links">
          <li>
            <ExportLink device={device} format="netscape" label="Export HTML" extension="html" /> <span class="hint">for browsers</span>
          </li>
          <li>
            <ExportLink device={device} format="json" label="Export JSON" extension="json" /> <span class="hint">complete, for backups</span>
          </li>
          <li>
            <ExportLink device={device} format="csv" label="Export CSV" extension="csv" /> <span class="hint">for spreadsheets</span>
          </li>
        </ul>
      </section>
    </Dialog>
  );
}
