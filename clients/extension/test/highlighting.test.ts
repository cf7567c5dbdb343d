import assert from "node:assert/strict";
import { test } from "node:test";

import type { Highlight } from "../src/lib/api.ts";
import { CannotHighlight, type HighlightDeps, type PageChannel, highlightSelection, pageHighlights, redraw } from "../src/lib/highlighting.ts";
import { HighlightStore, colorName, highlightWrite, highlightsHeading, linesOf } from "../src/lib/highlights.ts";
import { localLocks } from "../src/lib/kv.ts";
import { LookupCache } from "../src/lib/lookups.ts";
import type { DrawReply, PageRequest, SelectionReply } from "../src/lib/marks.ts";
import { MAX_QUEUED_WRITES } from "../src/lib/config.ts";
import { QueueFull } from "../src/lib/errors.ts";
import { WriteQueue } from "../src/lib/queue.ts";
import { type FakeServer, json, signedIn } from "./fakes.ts";

const URL_ = "https://news.test/story";
const NOW = new Date("2026-11-28T08:00:00Z");
const SELECTOR = { quote: "a passage", prefix: "before ", suffix: " after" };

class FakePage implements PageChannel {
  readonly asked: { tabId: number; request: PageRequest }[] = [];
  selection: SelectionReply = { selector: SELECTOR };
  reachable = true;
  /** Keys the page does not find. */
  missing = new Set<string>();

  async ask<T>(tabId: number, request: PageRequest): Promise<T> {
    this.asked.push({ tabId, request });
    if (!this.reachable) throw new Error("Cannot access contents of the page.");
    if (request.type === "selection") return this.selection as T;
    if (request.type === "draw") {
      const found = request.items.filter((i) => !this.missing.has(i.quote)).map((i) => i.key);
      const missing = request.items.filter((i) => this.missing.has(i.quote)).map((i) => i.key);
      return { found, missing } satisfies DrawReply as T;
    }
    return "pong" as T;
  }

  draws(): PageRequest[] {
    return this.asked.map((a) => a.request).filter((r) => r.type === "draw");
  }
}

function highlight(id: string, quote: string, extra: Partial<Highlight> = {}): Highlight {
  return { id, bookmarkId: "bm", quote, prefix: "", suffix: "", start: 1, end: 2, color: "yellow", note: "", anchor: "exact", createdAt: `2026-11-2${id.length}T00:00:00Z`, updatedAt: "2026-11-28T00:00:00Z", ...extra };
}

async function setup(saved: boolean) {
  const harness = await signedIn();
  const { server } = harness;
  let ids = 0;
  server.on("GET /v1/bookmarks/lookup", () =>
    saved ? json(200, { data: { clientBookmarkId: "bm", url: URL_, title: "Story", userTags: [], collectionIds: [] } }) : json(404, { code: "not-found", message: "Not saved." }),
  );
  server.on("PUT /v1/bookmarks/*", (r) => json(200, { data: { clientBookmarkId: r.path.split("/").pop(), userTags: [], collectionIds: [], title: null, ...(r.body as object) } }));
  server.on("POST /v1/enrichment/capture", () => json(202, { data: { accepted: true } }));
  server.on("PUT /v1/highlights/*", (r) => json(200, { data: { ...highlight(r.path.split("/").pop()!, ""), ...(r.body as object), start: 10, end: 19, anchor: "exact" } }));
  server.on("GET /v1/bookmarks/delta", () => json(200, { data: { cursor: null, nextCursor: null, bookmarks: [], collections: [], collectionTombstones: [], highlights: [], highlightTombstones: [] } }));
  const page = new FakePage();
  const deps: HighlightDeps = {
    api: harness.api,
    queue: new WriteQueue(harness.local, localLocks()),
    lookups: new LookupCache(),
    capture: async () => ({ html: "<html><body>before a passage after</body></html>" }),
    newId: () => `id-${++ids}`,
    now: () => NOW,
    highlights: new HighlightStore(harness.local, localLocks()),
    page,
  };
  return { server, deps, page };
}

const routes = (server: FakeServer) => server.seen.map((r) => `${r.method} ${r.path.split("?")[0]}`).filter((r) => !r.startsWith("GET"));

test("highlighting on a saved page PUTs the selector to the page's bookmark and draws it at once", async () => {
  const { server, deps, page } = await setup(true);
  const outcome = await highlightSelection(deps, { id: 7, url: URL_ });
  assert.deepEqual(outcome, { state: "saved", id: "id-1", bookmarkId: "bm", savedPage: false, drawn: true });
  assert.deepEqual(routes(server), ["PUT /v1/highlights/id-1"]);
  assert.deepEqual(server.seen.find((r) => r.method === "PUT")?.body, { bookmarkId: "bm", ...SELECTOR, color: "yellow" });
  assert.deepEqual(page.draws(), [{ type: "draw", items: [{ key: 0, ...SELECTOR, color: "yellow" }] }]);
  const [kept] = await deps.highlights.of("bm");
  assert.equal(kept?.start, 10, "the server's answer replaces the local record");
});

test("highlighting a page that is not saved saves and captures it first, then highlights it", async () => {
  const { server, deps } = await setup(false);
  const outcome = await highlightSelection(deps, { id: 7, url: URL_, title: "Story" });
  assert.equal(outcome.savedPage, true);
  assert.deepEqual(routes(server), ["PUT /v1/bookmarks/id-1", "POST /v1/enrichment/capture", "PUT /v1/highlights/id-2"]);
  assert.equal((server.seen.at(-1)?.body as { bookmarkId: string }).bookmarkId, "id-1");
});

test("offline, the highlight is drawn and queued behind its bookmark's PUT, then sent in that order", async () => {
  const { server, deps, page } = await setup(false);
  server.offline = true;
  const outcome = await highlightSelection(deps, { id: 7, url: URL_ });
  assert.equal(outcome.state, "queued");
  assert.equal(outcome.drawn, true);
  assert.deepEqual((await deps.queue.all()).map((w) => `${w.kind} ${w.id}`), ["put id-1", "highlight-put id-2"]);
  assert.equal(page.draws().length, 1);
  server.offline = false;
  assert.deepEqual(await deps.queue.flush(deps.api), { sent: 2, refused: 0, left: 0 });
  assert.deepEqual(routes(server), ["PUT /v1/bookmarks/id-1", "PUT /v1/highlights/id-2"]);
});

test("with the queue full, a highlight that would wait behind it is refused and not kept", async () => {
  const { server, deps } = await setup(true);
  for (let i = 0; i < MAX_QUEUED_WRITES; i += 1) await deps.queue.add({ kind: "delete", id: `old-${i}` });
  await assert.rejects(highlightSelection(deps, { id: 7, url: URL_ }), QueueFull);
  assert.deepEqual(await deps.highlights.of("bm"), []);
  assert.equal((await deps.queue.all()).length, MAX_QUEUED_WRITES);
  assert.deepEqual(routes(server), [], "nothing sent");
});

test("a highlight the server refuses is not kept, and the refusal is the error", async () => {
  const { server, deps } = await setup(true);
  server.on("PUT /v1/highlights/*", () => json(400, { code: "invalid-request", message: "quote: too long" }));
  await assert.rejects(highlightSelection(deps, { id: 7, url: URL_ }), /quote: too long/);
  assert.deepEqual(await deps.highlights.of("bm"), []);
});

test("no selection, or a page that is not a web page, is refused without a write", async () => {
  const { server, deps, page } = await setup(true);
  page.selection = { problem: "Select some text on the page first." };
  await assert.rejects(highlightSelection(deps, { id: 7, url: URL_ }), CannotHighlight);
  await assert.rejects(highlightSelection(deps, { id: 7, url: "chrome://settings" }), CannotHighlight);
  assert.deepEqual(routes(server), []);
});

test("the popup's list: drawn ones in page order, then the ones not found; unknown when the tab cannot be read", async () => {
  const { deps, page } = await setup(true);
  await deps.highlights.put(highlight("a", "first", { note: "<b>not markup</b>", color: "green" }));
  await deps.highlights.put(highlight("bb", "gone"));
  await deps.highlights.put(highlight("ccc", "third"));
  await deps.highlights.put(highlight("x", "other page", { bookmarkId: "other" }));
  page.missing.add("gone");
  const listed = await pageHighlights(deps, URL_, 7);
  assert.equal(listed.bookmarkId, "bm");
  assert.deepEqual(listed.lines.map((l) => [l.id, l.found]), [["a", true], ["ccc", true], ["bb", false]]);
  assert.equal(listed.lines[0]?.note, "<b>not markup</b>");
  page.reachable = false;
  assert.deepEqual((await pageHighlights(deps, URL_, 7)).lines.map((l) => l.found), [null, null, null]);
  assert.deepEqual(linesOf([highlight("a", "q")], { found: [3], missing: [] }), []);
  assert.equal(colorName("purple"), "Purple");
  assert.equal(highlightsHeading(2), "Highlights (2)");
});

test("coming back to a saved page draws its highlights; an unsaved page or one without highlights draws nothing", async () => {
  const { deps, page } = await setup(true);
  assert.equal(await redraw(deps, 7, URL_), null);
  await deps.highlights.put(highlight("a", "first"));
  assert.deepEqual(await redraw(deps, 7, URL_), { found: [0], missing: [] });
  const unsaved = await setup(false);
  await unsaved.deps.highlights.put(highlight("a", "first"));
  assert.equal(await redraw(unsaved.deps, 7, URL_), null);
  assert.equal(page.draws().length, 1);
});

test("coming back draws the local copy at once, then again only when the sync changed what the page shows", async () => {
  const { server, deps, page } = await setup(true);
  await deps.highlights.put(highlight("a", "first"));
  const delta = (highlights: Highlight[], highlightTombstones: { id: string; deletedAt: string }[] = []) =>
    json(200, { data: { cursor: null, nextCursor: null, bookmarks: [], collections: [], collectionTombstones: [], highlights, highlightTombstones } });
  server.on("GET /v1/bookmarks/delta", () => delta([highlight("bb", "from the phone", { color: "green" })]));
  assert.deepEqual(await redraw(deps, 7, URL_), { found: [0, 1], missing: [] });
  const drawn = page.draws().map((d) => (d.type === "draw" ? d.items.map((i) => i.quote) : []));
  assert.deepEqual(drawn, [["first"], ["first", "from the phone"]]);

  server.on("GET /v1/bookmarks/delta", () => delta([highlight("a", "first", { note: "a note is not drawn" })]));
  await redraw(deps, 7, URL_);
  assert.equal(page.draws().length, 3); // the local copy again; the note changed nothing drawn

  server.on("GET /v1/bookmarks/delta", () => delta([], [{ id: "a", deletedAt: "t" }, { id: "bb", deletedAt: "t" }]));
  assert.equal(await redraw(deps, 7, URL_), null);
  const last = page.draws().at(-1);
  assert.deepEqual(last?.type === "draw" ? last.items : null, []); // the marks of the deleted ones are removed
  assert.equal(server.count("GET /v1/bookmarks/delta"), 3); // every load asks
});

test("the local copy follows the delta stream: highlights in, tombstones out, cursor kept", async () => {
  const { server, deps } = await setup(true);
  await deps.highlights.put(highlight("old", "old"));
  const pages = [
    { cursor: null, nextCursor: "c1", collections: [], collectionTombstones: [], highlights: [highlight("new", "new", { color: "blue" })], highlightTombstones: [] },
    { cursor: "c1", nextCursor: null, collections: [], collectionTombstones: [], highlights: [], highlightTombstones: [{ id: "old", deletedAt: "t" }] },
  ];
  server.on("GET /v1/bookmarks/delta", (r) => json(200, { data: new URL(`http://x${r.path}`).searchParams.get("cursor") === "c1" ? pages[1] : pages[0] }));
  await deps.highlights.sync(deps.api);
  assert.deepEqual((await deps.highlights.of("bm")).map((h) => [h.id, h.color]), [["new", "blue"]]);
  assert.equal(server.count("GET /v1/bookmarks/delta"), 2);
});

test("the PUT body of a selection: the selector and the color, no offsets", () => {
  assert.deepEqual(highlightWrite("bm", SELECTOR), { bookmarkId: "bm", ...SELECTOR, color: "yellow" });
});
