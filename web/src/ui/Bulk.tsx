// The toolbar "Selection": tag, file, archive, favorite or delete many bookmarks at once.

import { useState } from "preact/hooks";
import type { Device } from "../app.ts";
import { normalizeTags, parseTagInput } from "../merge.ts";
import { plural } from "./common.tsx";
import type { Row } from "./List.tsx";
import { buildTree, flatten } from "./Sidebar.tsx";
import { setUi, ui } from "./state.ts";

export function BulkBar(props: { device: Device; rows: Row[] }) {
  const { device } = props;
  const [tag, setTag] = useState("");
  const [target, setTarget] = useState("");
  const ids = [...ui.selection];
  const collections = flatten(buildTree(device.store.collections()));
  const clear = () => setUi({ selection: new Set(), anchor: null });
  const all = () => setUi({ selection: new Set(props.rows.map((r) => r.bookmark.clientBookmarkId)) });
  return (
    <div class="bulk" role="toolbar" aria-label="Selection">
      <span class="bulk-count">{plural(ids.length, "selected", "selected")}</span>
      {ids.length < props.rows.length && (
        <button type="button" class="small" onClick={all}>
          Select all {props.rows.length.toLocaleString()} matching
        </button>
      )}
      <form
        class="bulk-form"
        onSubmit={(e) => {
          e.preventDefault();
          const added = parseTagInput(tag);
          if (!added.length) return;
          void device.update(ids, (b) => ({ userTags: normalizeTags([...b.userTags, ...added]) }));
          setTag("");
        }}
      >
        <label for="bulk-tag" class="sr-only">
          Tag to add
        </label>
        <input id="bulk-tag" placeholder="tag" value={tag} onInput={(e) => setTag(e.currentTarget.value)} />
        <button type="submit" class="small">
          Add tag
        </button>
      </form>
      {collections.length > 0 && (
        <form
          class="bulk-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (!target) return;
            void device.update(ids, (b) => ({ collectionIds: b.collectionIds.includes(target) ? b.collectionIds : [...b.collectionIds, target] }));
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
          <button type="submit" class="small">
            File
          </button>
        </form>
      )}
      <button type="button" class="small" onClick={() => void device.update(ids, () => ({ isArchived: !ui.filter || ui.filter.kind !== "archived" }))}>
        {ui.filter.kind === "archived" ? "Unarchive" : "Archive"}
      </button>
      <button type="button" class="small" onClick={() => void device.update(ids, () => ({ isFavorite: true }))}>
        Favorite
      </button>
      <button
        type="button"
        class="small danger"
        onClick={() => {
          void device.remove(ids);
          clear();
        }}
      >
        Delete
      </button>
      <button type="button" class="small" onClick={clear}>
        Clear selection
      </button>
    </div>
  );
}
