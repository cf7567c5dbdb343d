import assert from "node:assert/strict";
import { test } from "node:test";

import { MAX_QUEUED_WRITES } from "../src/lib/config.ts";
import { localLocks, MemoryKeyValue } from "../src/lib/kv.ts";
import { QueueFull, describeError } from "../src/lib/errors.ts";
import { WriteQueue, queuedLine } from "../src/lib/queue.ts";
import { json, signedIn } from "./fakes.ts";

const put = (id: string) => ({ kind: "put" as const, id, body: { url: `https://example.com/${id}` } });

test("queued writes are sent in the order they were made, then the queue is empty", async () => {
  const { server, local, api } = await signedIn();
  server.on("PUT /v1/bookmarks/*", (r) => json(200, { data: r.body })).on("DELETE /v1/bookmarks/*", () => json(204, null));
  const queue = new WriteQueue(local, localLocks());
  await queue.add(put("a"));
  await queue.add({ kind: "delete", id: "a" });
  await queue.add(put("b"));
  assert.deepEqual(await queue.flush(api), { sent: 3, refused: 0, left: 0 });
  assert.deepEqual(server.seen.map((r) => `${r.method} ${r.path}`), ["PUT /v1/bookmarks/a", "DELETE /v1/bookmarks/a", "PUT /v1/bookmarks/b"]);
  assert.deepEqual(await queue.all(), []);
});

test("offline, the queue keeps every write for later", async () => {
  const { server, local, api } = await signedIn();
  const queue = new WriteQueue(local, localLocks());
  await queue.add(put("a"));
  server.offline = true;
  assert.deepEqual(await queue.flush(api), { sent: 0, refused: 0, left: 1 });
  assert.deepEqual(await queue.all(), [put("a")]);
});

test("a write the server refuses is dropped, one it cannot take now is kept in front", async () => {
  const { server, local, api } = await signedIn();
  server.on("PUT /v1/bookmarks/bad", () => json(400, { code: "invalid-url", message: "Bad URL." }));
  server.on("PUT /v1/bookmarks/busy", () => json(503, { code: "unavailable", message: "Later." }));
  const queue = new WriteQueue(local, localLocks());
  for (const id of ["bad", "busy", "c"]) await queue.add(put(id));
  assert.deepEqual(await queue.flush(api), { sent: 0, refused: 1, left: 2 });
  assert.deepEqual((await queue.all()).map((w) => w.id), ["busy", "c"]);
});

test("the queue follows the client core's policy: offline, 408, 429, 5xx and 401 wait; other 4xx are dropped", async () => {
  const cases: [number, "refused" | "left"][] = [
    [400, "refused"], [403, "refused"], [404, "refused"], [409, "refused"], [413, "refused"],
    [401, "left"], [408, "left"], [429, "left"], [500, "left"], [501, "left"], [502, "left"], [504, "left"],
  ];
  for (const [status, expected] of cases) {
    const { server, local, api } = await signedIn();
    server.on("PUT /v1/bookmarks/*", () => json(status, { code: "some-code", message: "No." }));
    const queue = new WriteQueue(local, localLocks());
    await queue.add(put("a"));
    const result = await queue.flush(api);
    assert.equal(result[expected], 1, `${status}: ${JSON.stringify(result)}`);
  }
});

test("a full queue refuses a new write with a sentence and drops none it holds", async () => {
  const { server, local, api } = await signedIn();
  const queue = new WriteQueue(local, localLocks());
  for (let i = 0; i < MAX_QUEUED_WRITES; i += 1) await queue.add(put(String(i)));
  await assert.rejects(queue.add(put("one-too-many")), (e) => e instanceof QueueFull && describeError(e) === e.message && /waiting to be sent/.test(e.message));
  const writes = await queue.all();
  assert.equal(writes.length, MAX_QUEUED_WRITES);
  assert.deepEqual([writes[0]?.id, writes.at(-1)?.id], ["0", String(MAX_QUEUED_WRITES - 1)]);
  assert.match(queuedLine(writes.length), /the most kept offline/);
  assert.equal(queuedLine(1), "1 save waiting to be sent.");
  server.on("PUT /v1/bookmarks/*", (r) => json(200, { data: r.body }));
  await queue.flush(api); // sent, the queue takes writes again
  await queue.add(put("next"));
  assert.deepEqual((await queue.all()).map((w) => w.id), ["next"]);
});

test("writes stored without a seq are sent in their stored order, and new ones go after them", async () => {
  const { server, local, api } = await signedIn();
  server.on("PUT /v1/bookmarks/*", (r) => json(200, { data: r.body }));
  await local.set("queue", [put("a"), put("b")]);
  const queue = new WriteQueue(local, localLocks());
  await queue.add(put("c"));
  assert.deepEqual(await queue.all(), [put("a"), put("b"), put("c")]);
  assert.deepEqual(await queue.flush(api), { sent: 3, refused: 0, left: 0 });
  assert.deepEqual(server.seen.map((r) => r.path), ["/v1/bookmarks/a", "/v1/bookmarks/b", "/v1/bookmarks/c"]);
});
