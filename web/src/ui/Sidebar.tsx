// The navigation "Library": All, Favorites, Archived, Broken links, Highlights, Duplicates (its group
// count, online), Trash, the collection tree (with counts) and the tags.

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Offline } from "../api.ts";
import type { Device } from "../app.ts";
import { groupCountLabel } from "../duplicates.ts";
import { isBroken } from "../links.ts";
import type { LocalBookmark, LocalCollection } from "../model.ts";
import { useOnline } from "./common.tsx";
import { type Filter, hashOf, setUi, ui } from "./state.ts";
import { tagKey } from "../../../clients/shared/tags.ts";

export interface TreeNode {
  collection: LocalCollection;
  depth: number;
  children: TreeNode[];
}

export function buildTree(collections: LocalCollection[]): TreeNode[] {
  const byParent = new Map<string | null, LocalCollection[]>();
  for (const c of collections) byParent.set(c.parentId, [...(byParent.get(c.parentId) ?? []), c]);
  const walk = (parent: string | null, depth: number, seen: Set<string>): TreeNode[] =>
    (byParent.get(parent) ?? [])
      .filter((c) => !seen.has(c.id))
      .map((c) => ({ collection: c, depth, children: walk(c.id, depth + 1, new Set([...seen, c.id])) }));
  return walk(null, 1, new Set());
}

export function flatten(nodes: TreeNode[]): TreeNode[] {
  return nodes.flatMap((n) => [n, ...flatten(n.children)]);
}

function same(a: Filter, b: Filter): boolean {
  return hashOf(a) === hashOf(b);
}

function TreeItems(props: { nodes: TreeNode[]; counts: Map<string, number>; onKey: (e: KeyboardEvent) => void }): JSX.Element {
  return (
    <>
      {props.nodes.map((node) => {
        const c = node.collection;
        const filter: Filter = { kind: "collection", id: c.id };
        const current = same(ui.filter, filter);
        return (
          <li
            key={c.id}
            role="treeitem"
            aria-level={node.depth}
            aria-label={`${c.name} (${props.counts.get(c.id) ?? 0})`}
            aria-selected={current}
            aria-expanded={node.children.length ? true : undefined}
            tabIndex={current || (ui.filter.kind !== "collection" && node === props.nodes[0] && node.depth === 1) ? 0 : -1}
            data-href={hashOf(filter)}
            onClick={(e) => {
              e.stopPropagation();
              location.hash = hashOf(filter);
            }}
            onKeyDown={props.onKey}
          >
            <span class="tree-label" style={{ paddingLeft: `${(node.depth - 1) * 14 + 10}px` }}>
              <span class="name">{c.name}</span>
              <span class="count">
                {props.counts.get(c.id) ?? 0}
              </span>
            </span>
            {node.children.length > 0 && (
              <ul role="group">
                <TreeItems nodes={node.children} counts={props.counts} onKey={props.onKey} />
              </ul>
            )}
          </li>
        );
      })}
    </>
  );
}

function onTreeKey(event: KeyboardEvent): void {
  const items = [...document.querySelectorAll<HTMLElement>('[role="tree"] [role="treeitem"]')];
  const index = items.indexOf(event.currentTarget as HTMLElement);
  let next: HTMLElement | undefined;
  if (event.key === "ArrowDown") next = items[index + 1];
  else if (event.key === "ArrowUp") next = items[index - 1];
  else if (event.key === "Home") next = items[0];
  else if (event.key === "End") next = items[items.length - 1];
  else if (event.key === "Enter" || event.key === " ") {
    const href = (event.currentTarget as HTMLElement).dataset.href;
    if (href) location.hash = href;
    event.preventDefault();
    event.stopPropagation();
    return;
  } else return;
  event.preventDefault();
  event.stopPropagation();
  next?.focus();
}

const COUNT_DELAY_MS = 800;

/** The number of duplicate groups on the first page ("20+" beyond it), refreshed a moment after the
 * library changes; null offline or before the server answered. */
function useDuplicateCount(device: Device): string | null {
  const [label, setLabel] = useState<string | null>(null);
  const online = useOnline();
  useEffect(() => {
    if (!online || !device.session.user) {
      setLabel(null);
      return;
    }
    let current = true;
    const timer = window.setTimeout(() => {
      device.duplicatesPage(null).then(
        (page) => current && setLabel(groupCountLabel(page)),
        (e: unknown) => current && e instanceof Offline && setLabel(null),
      );
    }, COUNT_DELAY_MS);
    return () => {
      current = false;
      window.clearTimeout(timer);
    };
  }, [device.store.version, online, device.session.user?.id]);
  return online ? label : null;
}

export function Sidebar(props: { device: Device; all: LocalBookmark[] }) {
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState("");
  const collections = props.device.store.collections();
  const counts = new Map<string, number>();
  const tagCounts = new Map<string, { label: string; count: number }>();
  let favorites = 0;
  let archived = 0;
  let broken = 0;
  for (const b of props.all) {
    if (b.isFavorite) favorites += 1;
    if (isBroken(b)) broken += 1;
    if (b.isArchived) archived += 1;
    for (const id of b.collectionIds) counts.set(id, (counts.get(id) ?? 0) + 1);
    // One entry per tag as the server tells tags apart (Rust and rust are one tag), named by its first spelling.
    for (const t of b.userTags) {
      const key = tagKey(t);
      const seen = tagCounts.get(key);
      tagCounts.set(key, { label: seen?.label ?? t, count: (seen?.count ?? 0) + 1 });
    }
  }
  const tags = [...tagCounts.values()].map((e): [string, number] => [e.label, e.count]).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 40);
  const duplicates = useDuplicateCount(props.device);
  const link = (filter: Filter, label: string, count: number | string | null) => (
    <li>
      <a href={hashOf(filter)} aria-current={same(ui.filter, filter) ? "page" : undefined} onClick={() => setUi({ query: "" })}>
        <span>{label}</span>
        {count !== null && " "}
        {count !== null && <span class="count">{typeof count === "number" ? count.toLocaleString() : count}</span>}
      </a>
    </li>
  );
  const create = async (event: Event) => {
    event.preventDefault();
    const trimmed = name.trim();
    if (!trimmed) return;
    const id = crypto.randomUUID();
    await props.device.store.putCollection(id, { name: trimmed.slice(0, 200), parentId: null });
    props.device.sync.kick();
    setName("");
    setCreating(false);
    location.hash = hashOf({ kind: "collection", id });
  };
  return (
    <nav class="sidebar" aria-label="Library">
      <ul class="nav-links">
        {link({ kind: "all" }, "All", props.all.length - archived)}
        {link({ kind: "favorites" }, "Favorites", favorites)}
        {link({ kind: "archived" }, "Archived", archived)}
        {link({ kind: "broken" }, "Broken links", broken)}
        {link({ kind: "highlights" }, "Highlights", props.device.store.highlights().length)}
        {link({ kind: "duplicates" }, "Duplicates", duplicates)}
        {link({ kind: "trash" }, "Trash", null)}
      </ul>
      <div class="nav-heading">
        <h2 id="collections-heading">Collections</h2>
        <button type="button" class="small" onClick={() => setCreating(!creating)} aria-expanded={creating} aria-label="New collection">
          + New
        </button>
      </div>
      {creating && (
        <form class="inline-form" onSubmit={create}>
          <label for="new-collection">Name</label>
          <input id="new-collection" value={name} maxLength={200} onInput={(e) => setName(e.currentTarget.value)} autoFocus />
          <button type="submit">Create</button>
        </form>
      )}
      {collections.length === 0 && !creating && <p class="hint">Group bookmarks into collections.</p>}
      <ul role="tree" aria-label="Collections" class="tree">
        <TreeItems nodes={buildTree(collections)} counts={counts} onKey={onTreeKey} />
      </ul>
      <h2>Tags</h2>
      {tags.length === 0 && <p class="hint">Tags you add show up here.</p>}
      <ul class="tag-cloud">
        {tags.map(([tag, count]) => (
          <li key={tag}>
            <a href={hashOf({ kind: "tag", tag })} aria-current={same(ui.filter, { kind: "tag", tag }) ? "page" : undefined}>
              <span>{tag}</span>
              <span class="count">{count}</span>
            </a>
          </li>
        ))}
      </ul>
      <div class="sidebar-footer">
        <button type="button" class="link-button" onClick={() => setUi({ dialog: "import" })}>
          Import &amp; export
        </button>
      </div>
    </nav>
  );
}
