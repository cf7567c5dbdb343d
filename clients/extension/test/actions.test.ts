import assert from "node:assert/strict";
import { test } from "node:test";

import { type ActionDeps, CannotSave, knownBookmark, remove, save, update } from "../src/lib/actions.ts";
import type { Captured } from "../src/lib/capture.ts";
import { localLocks } from "../src/lib/kv.ts";
import { LookupCache } from "../src/lib/lookups.ts";
import { MAX_QUEUED_WRITES } from "../src/lib/config.ts";
import { QueueFull, describeError } from "../src/lib/errors.ts";
import { WriteQueue } from "../src/lib/queue.ts";
import { type FakeServer, type Seen, json, signedIn } from "./fakes.ts";

const URL_ = "https://news.test/story";
const NOW = new Date("2026-11-27T08:00:00Z");

async function setup(captured: Captured = { html: "<html><body>Members only</body></html>" }) {
  const harness = await signedIn();
  const { server } = harness;
  server.on("GET /v1/bookmarks/lookup", () => json(404, { code: "not-found", message: "Not saved." }));
  server.on("PUT /v1/bookmarks/*", (r) => json(200, { data: { clientBookmarkId: r.path.split("/").pop(), userTags: [], collectionIds: [], title: null, ...(r.body as object) } }));
  server.on("DELETE /v1/bookmarks/*", () => json(204, null));
  server.on("POST /v1/enrichment/capture", () => json(202, { data: { accepted: true, status: "pending" } }));
  const deps: ActionDeps = {
    api: harness.api,
    queue: new WriteQueue(harness.local, localLocks()),
    lookups: new LookupCache(),
    capture: async () => captured,
    newId: () => "new-id",
    now: () => NOW,
  };
  return { server, deps };
}

const last = (server: FakeServer, route: string): Seen | undefined =>
  server.seen.filter((r) => `${r.method} ${r.path.split("?")[0]}`.startsWith(route)).pop();

test("saving a tab puts the bookmark under a new id, then sends the rendered page", async () => {
  const { server, deps } = await setup();
  const outcome = await save(deps, { url: URL_, title: "Story", tags: ["news"], collectionIds: ["c1"], tabId: 7 });
  assert.equal(outcome.state, "saved");
  assert.equal(outcome.capture, "captured");
  assert.deepEqual(last(server, "PUT /v1/bookmarks/new-id")?.body, {
    url: URL_, title: "Story", userTags: ["news"], collectionIds: ["c1"], clientSavedAt: NOW.toISOString(),
  });
  assert.deepEqual(last(server, "POST /v1/enrichment/capture")?.body, {
    clientBookmarkId: "new-id", url: URL_, html: "<html><body>Members only</body></html>", title: "Story",
  });
  assert.equal(deps.lookups.get(URL_)?.clientBookmarkId, "new-id");
});

test("saving a page that is already saved updates that bookmark instead of adding another", async () => {
  const { server, deps } = await setup();
  server.on("GET /v1/bookmarks/lookup", () => json(200, { data: { clientBookmarkId: "old", url: URL_, title: "Story", userTags: ["a"], collectionIds: [] } }));
  await save(deps, { url: URL_, title: "Story" });
  const put = last(server, "PUT /v1/bookmarks/");
  assert.equal(put?.path, "/v1/bookmarks/old");
  assert.deepEqual(put?.body, { url: URL_, title: "Story" }); // tags, collections and save time are kept
});

test("offline with the queue full, a save is refused with the queue's sentence, the queue unchanged", async () => {
  const { server, deps } = await setup();
  for (let i = 0; i < MAX_QUEUED_WRITES; i += 1) await deps.queue.add({ kind: "delete", id: `old-${i}` });
  server.offline = true;
  await assert.rejects(save(deps, { url: URL_ }), (e) => e instanceof QueueFull && /Try again once you're back online/.test(describeError(e)));
  await assert.rejects(remove(deps, "old-0", URL_), QueueFull);
  assert.equal((await deps.queue.all()).length, MAX_QUEUED_WRITES);
});

test("a link is saved without a capture", async () => {
  const { server, deps } = await setup();
  const outcome = await save(deps, { url: URL_ });
  assert.equal(outcome.capture, "not-asked");
  assert.equal(server.count("POST /v1/enrichment/capture"), 0);
});

test("a page over the size limit is saved without its copy, and the popup says so", async () => {
  const { server, deps } = await setup({ skipped: "too-large" });
  const outcome = await save(deps, { url: URL_, tabId: 1 });
  assert.equal(outcome.state, "saved");
  assert.equal(outcome.capture, "too-large");
  assert.match(outcome.message, /too large/);
  assert.equal(server.count("POST /v1/enrichment/capture"), 0);
});

test("a refused capture keeps the bookmark and explains the refusal", async () => {
  const { server, deps } = await setup();
  server.on("POST /v1/enrichment/capture", () => json(403, { code: "consent-required", message: "Turn on useAi." }));
  const outcome = await save(deps, { url: URL_, tabId: 1 });
  assert.equal(outcome.capture, "failed");
  assert.match(outcome.message, /AI enrichment/);
});

test("offline, a save is queued under its id and sent by the next flush", async () => {
  const { server, deps } = await setup();
  server.offline = true;
  const outcome = await save(deps, { url: URL_, title: "Story", tabId: 1 });
  assert.equal(outcome.state, "queued");
  assert.deepEqual((await deps.queue.all()).map((w) => w.id), ["new-id"]);
  server.offline = false;
  assert.equal((await deps.queue.flush(deps.api)).sent, 1);
  assert.equal(last(server, "PUT /v1/bookmarks/")?.path, "/v1/bookmarks/new-id");
});

test("browser pages are refused before anything is sent", async () => {
  const { server, deps } = await setup();
  await assert.rejects(save(deps, { url: "chrome://settings" }), CannotSave);
  assert.equal(server.seen.length, 0);
});

test("edit sends the new tags and collection; delete removes the bookmark and the page reads unsaved", async () => {
  const { server, deps } = await setup();
  await update(deps, "b1", { url: URL_, tags: ["x"], collectionIds: [] });
  assert.deepEqual(last(server, "PUT /v1/bookmarks/b1")?.body, { url: URL_, userTags: ["x"], collectionIds: [] });
  assert.equal(await remove(deps, "b1", URL_), "deleted");
  assert.equal(last(server, "DELETE /v1/bookmarks/")?.path, "/v1/bookmarks/b1");
  assert.equal(deps.lookups.get(URL_), null);
});

test("a delete made offline is queued", async () => {
  const { server, deps } = await setup();
  server.offline = true;
  assert.equal(await remove(deps, "b1", URL_), "queued");
  assert.deepEqual(await deps.queue.all(), [{ kind: "delete", id: "b1" }]);
});

test("a lookup answer that left before a save cannot mark the saved page unsaved", async () => {
  const { server, deps } = await setup();
  let answer: (response: Response) => void = () => undefined;
  server.on("GET /v1/bookmarks/lookup", () => new Promise<Response>((resolve) => { answer = resolve; }));
  const racing = knownBookmark(deps, URL_); // the badge asks while the page is being saved
  await new Promise((resolve) => setImmediate(resolve));
  server.on("GET /v1/bookmarks/lookup", () => json(404, { code: "not-found", message: "Not saved." }));
  await save(deps, { url: URL_, tabId: 7 });
  answer(json(404, { code: "not-found", message: "Not saved." })); // asked before the save landed
  assert.equal((await racing)?.clientBookmarkId, "new-id");
  assert.equal(deps.lookups.get(URL_)?.clientBookmarkId, "new-id");
  assert.equal((await knownBookmark(deps, URL_))?.clientBookmarkId, "new-id");
});

test("with nothing done meanwhile, a lookup answer is kept", async () => {
  const { server, deps } = await setup();
  assert.equal(await knownBookmark(deps, URL_), null);
  assert.equal(await knownBookmark(deps, URL_), null);
  assert.equal(server.count("GET /v1/bookmarks/lookup"), 1);
});
