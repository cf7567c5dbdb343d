import assert from "node:assert/strict";
import { test } from "node:test";
import { checkRefusedText, moveFields, isBroken, linkBadge, linkCheckedLine, linkStatusWords, timeAgo, utcDay, waybackUrl } from "../src/links.ts";
import { materializeBookmark, skeleton } from "../src/merge.ts";
import type { LinkStatus } from "../src/model.ts";

const now = new Date("2026-11-28T12:00:00Z");

test("gone and unreachable links are broken; the others, and unchecked ones, are not", () => {
  const broken = (linkStatus: LinkStatus | null | undefined) => isBroken({ linkStatus });
  assert.equal(broken("gone"), true);
  assert.equal(broken("unreachable"), true);
  for (const status of ["ok", "moved", "blocked", null, undefined] as const) assert.equal(broken(status), false);
});

test("a row's badge: Link broken for gone and unreachable, Moved for moved, nothing otherwise", () => {
  assert.equal(linkBadge("gone"), "Link broken");
  assert.equal(linkBadge("unreachable"), "Link broken");
  assert.equal(linkBadge("moved"), "Moved");
  assert.equal(linkBadge("ok"), null);
  assert.equal(linkBadge("blocked"), null);
  assert.equal(linkBadge(null), null);
});

test("each status in plain words", () => {
  assert.equal(linkStatusWords("ok"), "works");
  assert.equal(linkStatusWords("moved"), "moved");
  assert.equal(linkStatusWords("gone"), "not found");
  assert.equal(linkStatusWords("blocked"), "blocked for robots — may work in a browser");
  assert.equal(linkStatusWords("unreachable"), "not reachable");
});

test("the Details line says when the link was checked and what was found, or that it never was", () => {
  assert.equal(linkCheckedLine({ linkStatus: "ok", linkCheckedAt: "2026-11-25T09:00:00Z" }, now), "Link checked 3 days ago: works");
  assert.equal(linkCheckedLine({ linkStatus: "gone", linkCheckedAt: "2026-11-28T11:59:40Z" }, now), "Link checked just now: not found");
  assert.equal(linkCheckedLine({ linkStatus: null, linkCheckedAt: null }, now), "Link not checked yet.");
  assert.equal(linkCheckedLine({ linkStatus: "moved", linkCheckedAt: null }, now), "Link checked: moved");
});

test("how long ago, in the largest whole unit", () => {
  assert.equal(timeAgo("2026-11-28T11:59:00Z", now), "1 minute ago");
  assert.equal(timeAgo("2026-11-28T11:15:00Z", now), "45 minutes ago");
  assert.equal(timeAgo("2026-11-28T07:00:00Z", now), "5 hours ago");
  assert.equal(timeAgo("2026-11-27T12:00:00Z", now), "1 day ago");
  assert.equal(timeAgo("2026-08-28T12:00:00Z", now), "3 months ago");
  assert.equal(timeAgo("2023-11-01T12:00:00Z", now), "3 years ago");
  assert.equal(timeAgo("2026-11-28T12:05:00Z", now), "just now"); // a clock a little ahead
  assert.equal(timeAgo("not a date", now), null);
});

test("the Wayback Machine address uses the saved day in UTC, else the day the server got it", () => {
  const b = { url: "https://example.com/a?b=1#c", clientSavedAt: "2024-03-09T23:30:00-02:00", createdAt: "2025-01-01T00:00:00Z" };
  assert.equal(waybackUrl(b), "https://web.archive.org/web/20240310/https://example.com/a?b=1#c");
  assert.equal(waybackUrl({ ...b, clientSavedAt: null }), "https://web.archive.org/web/20250101/https://example.com/a?b=1#c");
  assert.equal(waybackUrl({ ...b, clientSavedAt: null, createdAt: "garbage" }), "https://web.archive.org/web/https://example.com/a?b=1#c");
  assert.equal(utcDay("0999-01-02T00:00:00Z"), "09990102");
});

test("using the new address keeps the title, description and picture shown; only a moved link has one", () => {
  const b = { linkStatus: "moved" as const, linkMovedTo: "https://new.test/a", title: "Mine", description: null, thumbnailUrl: "/v1/previews/image/x" };
  assert.deepEqual(moveFields(b), { url: "https://new.test/a", title: "Mine", thumbnailUrl: "/v1/previews/image/x" });
  assert.equal(moveFields({ ...b, linkStatus: "ok" }), null);
  assert.equal(moveFields({ ...b, linkMovedTo: null }), null);
});

test("a refused check says why in words", () => {
  assert.equal(checkRefusedText(429, 42), "That's a lot of checks in a minute. Try again in 42 seconds.");
  assert.equal(checkRefusedText(429, null), "That's a lot of checks in a minute. Try again in a moment.");
  assert.equal(checkRefusedText(404, null), "This link can't be checked yet. Try again in a moment.");
  assert.equal(checkRefusedText(503, 5), null);
});

test("a new URL hides the old one's link health until the server answers", () => {
  const at = "2026-01-01T00:00:00Z";
  const base = { ...skeleton("m", at), url: "http://old.test/", linkStatus: "moved" as const, linkCheckedAt: at, linkMovedTo: "https://new.test/" };
  const moved = materializeBookmark(base, [{ seq: 1, kind: "put", id: "m", fields: { url: "https://new.test/" }, createdAt: at }]);
  assert.equal(moved?.linkStatus, null);
  assert.equal(moved?.linkMovedTo, null);
  assert.equal(moved?.linkCheckedAt, null);
  const same = materializeBookmark(base, [{ seq: 1, kind: "put", id: "m", fields: { url: "http://old.test/", title: "t" }, createdAt: at }]);
  assert.equal(same?.linkStatus, "moved");
});
