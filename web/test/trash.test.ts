import assert from "node:assert/strict";
import { test } from "node:test";
import { appendPage, retentionDays, shortDate, trashLine, trashTitle, type TrashItem } from "../src/trash.ts";

process.env.TZ = "UTC";

function item(id: string, title: string | null, url = `https://e.example/${id}`): TrashItem {
  return {
    bookmark: { clientBookmarkId: id, url, title } as TrashItem["bookmark"],
    deletedAt: "2026-12-03T10:00:00Z",
    purgeAt: "2027-01-02T10:00:00Z",
    mergedInto: null,
  };
}

test("the line says when it was deleted and when it goes for good, the year only when it is another", () => {
  const now = new Date("2026-12-05T00:00:00Z");
  assert.equal(trashLine(item("a", "A"), now), "Deleted 3 Dec · gone for good on 2 Jan 2027");
  assert.equal(trashLine(item("a", "A"), new Date("2027-01-01T00:00:00Z")), "Deleted 3 Dec 2026 · gone for good on 2 Jan");
  assert.equal(shortDate("not a date", now), "an unknown day");
});

test("an untitled bookmark is called by its URL", () => {
  assert.equal(trashTitle(item("a", "Rust ownership")), "Rust ownership");
  assert.equal(trashTitle(item("b", null, "https://untitled.example/x")), "https://untitled.example/x");
  assert.equal(trashTitle(item("c", "   ", "https://blank.example/")), "https://blank.example/");
});

test("the retention in days comes from an item's two dates", () => {
  assert.equal(retentionDays(item("a", "A")), 30);
  assert.equal(retentionDays({ deletedAt: "x", purgeAt: "y" }), null);
});

test("a next page adds only bookmarks not shown yet", () => {
  const shown = [item("a", "A"), item("b", "B")];
  assert.deepEqual(
    appendPage(shown, [item("b", "B"), item("c", "C")]).map((i) => i.bookmark.clientBookmarkId),
    ["a", "b", "c"],
  );
});
