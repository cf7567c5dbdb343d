// UI state shared by the views (what is shown, selected, open) and the hooks that re-render on change.

import { useEffect, useState } from "preact/hooks";

export type Filter =
  | { kind: "all" }
  | { kind: "favorites" }
  | { kind: "archived" }
  | { kind: "trash" }
  | { kind: "duplicates" }
  | { kind: "broken" }
  | { kind: "highlights" }
  | { kind: "collection"; id: string }
  | { kind: "tag"; tag: string };

export type Dialog = null | "settings" | "help" | "import";

export interface UiState {
  filter: Filter;
  query: string;
  detailsId: string | null;
  readerId: string | null;
  /** The highlight the Reader scrolls to when it opens (from the view "Highlights"). */
  readerHighlight: string | null;
  dialog: Dialog;
  active: number;
  selection: Set<string>;
  anchor: string | null;
  /** The search whose every match is selected ("Select all matching the search"), else null: a hand-made selection. */
  selectionQuery: string | null;
}

export function filterFromHash(hash: string): Filter {
  const [, kind, ...rest] = hash.replace(/^#/, "").split("/");
  const value = decodeURIComponent(rest.join("/"));
  if (kind === "favorites") return { kind: "favorites" };
  if (kind === "archived") return { kind: "archived" };
  if (kind === "trash") return { kind: "trash" };
  if (kind === "duplicates") return { kind: "duplicates" };
  if (kind === "broken") return { kind: "broken" };
  if (kind === "highlights") return { kind: "highlights" };
  if (kind === "collection" && value) return { kind: "collection", id: value };
  if (kind === "tag" && value) return { kind: "tag", tag: value };
  return { kind: "all" };
}

export function hashOf(filter: Filter): string {
  switch (filter.kind) {
    case "collection":
      return `#/collection/${encodeURIComponent(filter.id)}`;
    case "tag":
      return `#/tag/${encodeURIComponent(filter.tag)}`;
    default:
      return `#/${filter.kind}`;
  }
}

const listeners = new Set<() => void>();
export const ui: UiState = {
  filter: filterFromHash(location.hash),
  query: "",
  detailsId: null,
  readerId: null,
  readerHighlight: null,
  dialog: null,
  active: -1,
  selection: new Set(),
  anchor: null,
  selectionQuery: null,
};

export function setUi(patch: Partial<UiState>): void {
  Object.assign(ui, patch);
  listeners.forEach((l) => l());
}

export function subscribeUi(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Re-render the calling component whenever ``subscribe`` reports a change. */
export function useSubscription(subscribe: (listener: () => void) => () => void): void {
  const [, setTick] = useState(0);
  useEffect(() => subscribe(() => setTick((t) => t + 1)), [subscribe]);
}

window.addEventListener("hashchange", () => setUi({ filter: filterFromHash(location.hash), active: -1 }));
