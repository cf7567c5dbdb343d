/** A small local copy of the user's collections, kept current from the delta stream.
 *
 * Delta pages carry bookmarks too; only the collection arrays are kept. The stored cursor is the one of
 * the last request, so the next sync replays that page (harmless) and goes on with what is newer.
 */

import type { ApiClient, Collection } from "./api.ts";
import { DELTA_PAGE_LIMIT } from "./config.ts";
import type { KeyValue } from "./kv.ts";

const KEY = "collections";

/** What the copy keeps of a collection: enough to name it in a select box. */
type KeptCollection = Pick<Collection, "id" | "name" | "parentId">;

interface CollectionCopy {
  cursor: string | null;
  items: Record<string, KeptCollection>;
}

export interface CollectionChoice {
  id: string;
  label: string;
}

export class CollectionStore {
  private readonly local: KeyValue;

  constructor(local: KeyValue) {
    this.local = local;
  }

  async sync(api: ApiClient): Promise<void> {
    const copy = await this.load();
    let cursor = copy.cursor;
    for (;;) {
      const page = await api.delta(cursor, DELTA_PAGE_LIMIT);
      for (const collection of page.collections) copy.items[collection.id] = pick(collection);
      for (const tombstone of page.collectionTombstones) delete copy.items[tombstone.id];
      copy.cursor = page.nextCursor ?? cursor;
      await this.local.set(KEY, copy);
      if (page.nextCursor === null) return;
      cursor = page.nextCursor;
    }
  }

  /** Every collection with its path ("Reading / Later"), sorted for a select box. */
  async choices(): Promise<CollectionChoice[]> {
    const { items } = await this.load();
    const choices = Object.values(items).map((c) => ({ id: c.id, label: pathOf(c, items) }));
    return choices.sort((a, b) => a.label.localeCompare(b.label));
  }

  async clear(): Promise<void> {
    await this.local.remove(KEY);
  }

  private async load(): Promise<CollectionCopy> {
    return (await this.local.get<CollectionCopy>(KEY)) ?? { cursor: null, items: {} };
  }
}

function pick(collection: Collection): KeptCollection {
  return { id: collection.id, name: collection.name, parentId: collection.parentId };
}

/** A collection whose parent is unknown or deleted shows at the top level; the depth bound stops a cycle. */
function pathOf(collection: KeptCollection, items: Record<string, KeptCollection>): string {
  const names = [collection.name];
  let parent = collection.parentId ? items[collection.parentId] : undefined;
  for (let depth = 0; parent && depth < 10; depth += 1) {
    names.unshift(parent.name);
    parent = parent.parentId ? items[parent.parentId] : undefined;
  }
  return names.join(" / ");
}
