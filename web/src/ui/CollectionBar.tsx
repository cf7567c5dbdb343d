// Rename, move and delete the collection being shown.

import { useState } from "preact/hooks";
import type { Device } from "../app.ts";
import type { LocalCollection } from "../model.ts";
import { buildTree, flatten } from "./Sidebar.tsx";

function descendants(all: LocalCollection[], id: string): Set<string> {
  const out = new Set([id]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const c of all) if (c.parentId && out.has(c.parentId) && !out.has(c.id)) out.add(c.id), (grew = true);
  }
  return out;
}

export function CollectionBar({ device, collection }: { device: Device; collection: LocalCollection }) {
  const [mode, setMode] = useState<null | "rename" | "move">(null);
  const [name, setName] = useState(collection.name);
  const [parent, setParent] = useState(collection.parentId ?? "");
  const all = device.store.collections();
  const blocked = descendants(all, collection.id);
  const parents = flatten(buildTree(all)).filter((n) => !blocked.has(n.collection.id) && n.depth < 10);
  const save = (fields: { name?: string; parentId?: string | null }) => {
    void device.store.putCollection(collection.id, { name: collection.name, parentId: collection.parentId, ...fields }).then(() => device.sync.kick());
    setMode(null);
  };
  return (
    <div class="collection-bar">
      <button type="button" class="small" aria-expanded={mode === "rename"} onClick={() => setMode(mode === "rename" ? null : "rename")}>
        Rename
      </button>
      <button type="button" class="small" aria-expanded={mode === "move"} onClick={() => setMode(mode === "move" ? null : "move")}>
        Move
      </button>
      <button
        type="button"
        class="small danger"
        onClick={() => {
          if (!window.confirm(`Delete the collection “${collection.name}”? Its bookmarks stay in your library.`)) return;
          void device.store.deleteCollection(collection.id).then(() => device.sync.kick());
          location.hash = "#/all";
        }}
      >
        Delete collection
      </button>
      {mode === "rename" && (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (name.trim()) save({ name: name.trim().slice(0, 200) });
          }}
        >
          <label for="rename-collection">New name</label>
          <input id="rename-collection" value={name} maxLength={200} onInput={(e) => setName(e.currentTarget.value)} autoFocus />
          <button type="submit">Save name</button>
        </form>
      )}
      {mode === "move" && (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            save({ parentId: parent || null });
          }}
        >
          <label for="move-collection">Put it in</label>
          <select id="move-collection" value={parent} onChange={(e) => setParent(e.currentTarget.value)}>
            <option value="">Top level</option>
            {parents.map(({ collection: c, depth }) => (
              <option key={c.id} value={c.id}>
                {"  ".repeat(depth - 1) + c.name}
              </option>
            ))}
          </select>
          <button type="submit">Move here</button>
        </form>
      )}
    </div>
  );
}
