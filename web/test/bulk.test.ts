import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_BULK_IDS, bulkDoneText, bulkRequest, bulkUndoText, fitsOneCall } from "../src/bulk.ts";

test("a hand-made selection is sent by its ids, each once", () => {
  assert.deepEqual(bulkRequest("archive", { kind: "ids", ids: ["a", "b", "a"] }), { action: "archive", ids: ["a", "b"] });
});

test("every match of a search is sent as the search's text, never as ids", () => {
  const request = bulkRequest("archive", { kind: "query", query: "  tag:news rust " });
  assert.deepEqual(request, { action: "archive", query: "tag:news rust" });
  assert.equal("ids" in request, false);
});

test("tags and collections travel with the actions that need them", () => {
  assert.deepEqual(bulkRequest("addTags", { kind: "ids", ids: ["a"] }, { tags: ["x"] }), { action: "addTags", ids: ["a"], tags: ["x"] });
  assert.deepEqual(bulkRequest("addToCollection", { kind: "query", query: "q" }, { collectionId: "c1", tags: ["ignored"] }), {
    action: "addToCollection",
    query: "q",
    collectionId: "c1",
  });
  assert.throws(() => bulkRequest("addTags", { kind: "ids", ids: ["a"] }));
  assert.throws(() => bulkRequest("removeFromCollection", { kind: "ids", ids: ["a"] }));
});

test("one call takes up to the server's bound of ids, or a search that says something", () => {
  const ids = Array.from({ length: MAX_BULK_IDS }, (_, i) => `id${i}`);
  assert.equal(fitsOneCall({ kind: "ids", ids }), true);
  assert.equal(fitsOneCall({ kind: "ids", ids: [...ids, "one more"] }), false);
  assert.equal(fitsOneCall({ kind: "ids", ids: [] }), false);
  assert.equal(fitsOneCall({ kind: "query", query: "  " }), false);
});

test("what a bulk change did is said in words, counting only what changed", () => {
  assert.equal(bulkDoneText("archive", 12), "Archived 12 bookmarks.");
  assert.equal(bulkDoneText("favorite", 1), "Favorited 1 bookmark.");
  assert.equal(bulkDoneText("delete", 1200), "Deleted 1,200 bookmarks.");
  assert.equal(bulkDoneText("removeFromCollection", 2), "Took 2 bookmarks out of the collection.");
  assert.equal(bulkDoneText("archive", 0), "Nothing changed: they were like that already.");
  assert.equal(bulkUndoText({ restored: 12, skipped: 0 }), "Put back 12 bookmarks.");
  assert.equal(bulkUndoText({ restored: 3, skipped: 1 }), "Put back 3 bookmarks. 1 bookmark changed since, and stay as they are.");
});
