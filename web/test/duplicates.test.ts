import assert from "node:assert/strict";
import { test } from "node:test";
import { type DuplicateGroup, appendGroups, groupCountLabel, keepDefault, memberTitle, mergeRequest, savedIso } from "../src/duplicates.ts";

function member(id: string, savedAt: string | null, createdAt = "2026-11-01T00:00:00Z", title: string | null = id): DuplicateGroup["bookmarks"][number] {
  return { clientBookmarkId: id, url: `https://www.e.example/${id}?utm_source=x`, title, clientSavedAt: savedAt, createdAt } as DuplicateGroup["bookmarks"][number];
}

function group(key: string, ...bookmarks: DuplicateGroup["bookmarks"]): DuplicateGroup {
  return { key, bookmarks };
}

test("the navigation counts the first page's groups, with a plus when more pages follow", () => {
  assert.equal(groupCountLabel({ groups: [], nextCursor: null }), "0");
  assert.equal(groupCountLabel({ groups: [group("a"), group("b"), group("c")], nextCursor: null }), "3");
  assert.equal(groupCountLabel({ groups: [group("a"), group("b")], nextCursor: "c1" }), "2+");
});

test("the oldest save is kept unless chosen otherwise, whatever the order", () => {
  const g = group("k", member("new", "2026-11-20T10:00:00Z"), member("old", "2026-11-02T10:00:00Z"), member("mid", "2026-11-10T10:00:00Z"));
  assert.equal(keepDefault(g), "old");
  // No save time of its own: when the server first had it.
  assert.equal(keepDefault(group("k", member("a", "2026-11-05T00:00:00Z"), member("b", null, "2026-11-03T00:00:00Z"))), "b");
  // Equal times: the first listed (the server lists the oldest first).
  assert.equal(keepDefault(group("k", member("x", "2026-11-05T00:00:00Z"), member("y", "2026-11-05T00:00:00Z"))), "x");
  assert.equal(keepDefault(group("k")), null);
  assert.equal(savedIso(member("b", null, "2026-11-03T00:00:00Z")), "2026-11-03T00:00:00Z");
});

test("the merge names the kept one and every other member", () => {
  const g = group("k", member("a", null), member("b", null), member("c", null));
  assert.deepEqual(mergeRequest(g, "b"), { keep: "b", merge: ["a", "c"] });
  assert.throws(() => mergeRequest(g, "z"));
});

test("an untitled member is called by its URL; later pages add only new groups", () => {
  assert.equal(memberTitle(member("a", null, undefined, "  ")), "https://www.e.example/a?utm_source=x");
  assert.deepEqual(
    appendGroups([group("a"), group("b")], [group("b"), group("c")]).map((g) => g.key),
    ["a", "b", "c"],
  );
});
