import assert from "node:assert/strict";
import { test } from "node:test";

import { CollectionStore } from "../src/lib/collections.ts";
import { json, signedIn } from "./fakes.ts";

const collection = (id: string, name: string, parentId: string | null = null) => ({ id, name, parentId, createdAt: "", updatedAt: "" });

test("the collection list is synced page by page until the stream ends, and resumes from the last request", async () => {
  const { server, local, api } = await signedIn();
  const pages: Record<string, unknown> = {
    "": { cursor: null, nextCursor: "c1", upserts: [{}], tombstones: [], collections: [collection("a", "Reading")], collectionTombstones: [] },
    c1: { cursor: "c1", nextCursor: "c2", upserts: [], tombstones: [], collections: [collection("b", "Later", "a"), collection("x", "Gone")], collectionTombstones: [] },
    c2: { cursor: "c2", nextCursor: null, upserts: [], tombstones: [], collections: [], collectionTombstones: [{ id: "x", deletedAt: "" }] },
  };
  server.on("GET /v1/bookmarks/delta", (r) => json(200, { data: pages[new URL(r.path, "http://x").searchParams.get("cursor") ?? ""] }));
  const store = new CollectionStore(local);
  await store.sync(api);
  assert.deepEqual(await store.choices(), [
    { id: "a", label: "Reading" },
    { id: "b", label: "Reading / Later" },
  ]);
  server.seen.length = 0;
  await store.sync(api);
  assert.deepEqual(server.seen.map((r) => new URL(r.path, "http://x").searchParams.get("cursor")), ["c2"]);
});

test("a collection whose parent is unknown shows at the top level", async () => {
  const { server, local, api } = await signedIn();
  server.on("GET /v1/bookmarks/delta", () =>
    json(200, { data: { cursor: null, nextCursor: null, collections: [collection("b", "Orphan", "deleted")], collectionTombstones: [] } }),
  );
  const store = new CollectionStore(local);
  await store.sync(api);
  assert.deepEqual(await store.choices(), [{ id: "b", label: "Orphan" }]);
});
