// The toolbar "Selection": tag, file, archive, favorite or delete many bookmarks at once. Online, one
// ``POST /v1/bookmarks/bulk`` does it (the selected ids, or the search's text when every match is
// selected) and its toast offers the server's undo; offline, or for bookmarks holding changes not yet sent,
// the local queue does it as for any edit.

import { useState } from "preact/hooks";
import { ApiError, Offline } from "../api.ts";
import type { Device } from "../app.ts";
import { type BulkAction, type BulkTarget, bulkDoneText, bulkRequest, bulkUndoText, fitsOneCall } from "../bulk.ts";
import { checkTagInput, checkTags, normalizeTags } from "../../../clients/shared/tags.ts";
import { plural } from "./common.tsx";
import type { Row } from "./List.tsx";
import { buildTree, flatten } from "./Sidebar.tsx";
import { setUi, ui } from "./state.ts";

/** Selects every match of the active search; a bulk change then names the search, not the ids. */
export function SelectAllMatching(props: { rows: Row[] }) {
  return (
    <button
      type="button"
      class="small"
      onClick={() => setUi({ selection: new Set(props.rows.map((r) => r.bookmark.clientBookmarkId)), selectionQuery: ui.query.trim(), anchor: null })}
    >
      Select all matching the search
    </button>
  );
}

/** What the selection stands for: the search (when every match was selected for it), else its ids. */
export function selectionTarget(): BulkTarget {
  const query = ui.query.trim();
  if (ui.selectionQuery !== null && query !== "" && ui.selectionQuery === query) return { kind: "query", query };
  return { kind: "ids", ids: [...ui.selection] };
}

function problem(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Offline) return error.message;
  return String(error);
}

export function BulkBar(props: { device: Device; rows: Row[] }) {
  const { device } = props;
  const [tag, setTag] = useState("");
  const [target, setTarget] = useState("");
  const [busy, setBusy] = useState(false);
  const ids = [...ui.selection];
  const chosen = selectionTarget();
  const searching = ui.query.trim() !== "";
  const collections = flatten(buildTree(device.store.collections()));
  const clear = () => setUi({ selection: new Set(), anchor: null, selectionQuery: null });
  const all = () => setUi({ selection: new Set(props.rows.map((r) => r.bookmark.clientBookmarkId)), selectionQuery: null });

  const undo = (token: string) => {
    device.undoBulk(token).then(
      (result) => device.toast(bulkUndoText(result)),
      (e: unknown) => device.toast(`It can't be undone: ${problem(e)}`),
    );
  };

  /** One server call when it can take it, else ``local`` (the queue, as for any edit). */
  const apply = async (action: BulkAction, extra: { tags?: string[]; collectionId?: string }, local: () => Promise<void>) => {
    const pending = device.store.pendingIds();
    const server = navigator.onLine && fitsOneCall(chosen) && (chosen.kind === "query" || !ids.some((id) => pending.has(id)));
    if (!server) return local();
    setBusy(true);
    try {
      const result = await device.bulk(bulkRequest(action, chosen, extra));
      device.toast(bulkDoneText(action, result.affected), result.affected > 0 ? () => undo(result.undoToken) : undefined);
      if (action === "delete") clear();
    } catch (e) {
      if (e instanceof Offline) await local();
      else device.toast(`Nothing changed: ${problem(e)}`);
    } finally {
      setBusy(false);
    }
  };

  const archiving = ui.filter.kind !== "archived";
  return (
    <div class="bulk" role="toolbar" aria-label="Selection">
      <span class="bulk-count">{chosen.kind === "query" ? `Everything matching “${chosen.query}”` : plural(ids.length, "selected", "selected")}</span>
      {searching
        ? chosen.kind === "ids" && <SelectAllMatching rows={props.rows} />
        : ids.length < props.rows.length && (
            <button type="button" class="small" onClick={all}>
              Select all {props.rows.length.toLocaleString()} matching
            </button>
          )}
      <form
        class="bulk-form"
        onSubmit={(e) => {
          e.preventDefault();
          const typed = checkTagInput(tag);
          if (typed.tags === null) {
            device.toast(typed.error);
            return;
          }
          const added = typed.tags;
          if (!added.length) return;
          setTag("");
          void apply("addTags", { tags: added }, async () => {
            // As on the server, a bookmark that would break the tag rule leaves every bookmark unchanged.
            const refused = ids
              .map((id) => device.store.get(id))
              .map((b) => (b ? checkTags([...b.userTags, ...added]).error : null))
              .find((error) => error);
            if (refused) {
              device.toast(`Nothing changed: ${refused}`);
              return;
            }
            await device.update(ids, (b) => ({ userTags: normalizeTags([...b.userTags, ...added]) }));
          });
        }}
      >
        <label for="bulk-tag" class="sr-only">
          Tag to add
        </label>
        <input id="bulk-tag" placeholder="tag" value={tag} onInput={(e) => setTag(e.currentTarget.value)} />
        <button type="submit" class="small" disabled={busy}>
          Add tag
        </button>
      </form>
      {collections.length > 0 && (
        <form
          class="bulk-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (!target) return;
            void apply("addToCollection", { collectionId: target }, () =>
              device.update(ids, (b) => ({ collectionIds: b.collectionIds.includes(target) ? b.collectionIds : [...b.collectionIds, target] })),
            );
          }}
        >
          <label for="bulk-collection" class="sr-only">
            Collection
          </label>
          <select id="bulk-collection" value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
            <option value="">Collection…</option>
            {collections.map(({ collection: c, depth }) => (
              <option key={c.id} value={c.id}>
                {"  ".repeat(depth - 1) + c.name}
              </option>
            ))}
          </select>
          <button type="submit" class="small" disabled={busy}>
            File
          </button>
        </form>
      )}
      <button
        type="button"
        class="small"
        disabled={busy}
        onClick={() => void apply(archiving ? "archive" : "unarchive", {}, () => device.update(ids, () => ({ isArchived: archiving })))}
      >
        {archiving ? "Archive" : "Unarchive"}
      </button>
      <button type="button" class="small" disabled={busy} onClick={() => void apply("favorite", {}, () => device.update(ids, () => ({ isFavorite: true })))}>
        Favorite
      </button>
      <button
        type="button"
        class="small danger"
        disabled={busy}
        onClick={() =>
          void apply("delete", {}, async () => {
            clear();
            await device.remove(ids);
          })
        }
      >
        Delete
      </button>
      <button type="button" class="small" onClick={clear}>
        Clear selection
      </button>
    </div>
  );
}
