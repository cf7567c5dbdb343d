// The client core's write queue (clients/shared/queue.ts) against the scripted server, on a host storage
// kept in memory; run by the web app's and the extension's test commands. Each client's own tests run it
// on its storage (IndexedDB, the storage area).

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiClient } from "../api.ts";
import { ApiError, OfflineError } from "../errors.ts";
import { type QueueStorage, QueueFull, type Unsequenced, WriteQueue, foldEdits } from "../queue.ts";
import { ScriptedServer, json } from "./scriptedServer.ts";

type Op =
  | { seq: number; kind: "put"; id: string; fields: Record<string, unknown> }
  | { seq: number; kind: "delete"; id: string };

/** A host's storage in memory: rows by seq, the next seq after the highest ever given, one forget that can fail. */
class MemoryStorage implements QueueStorage<Op> {
  readonly rows = new Map<number, Op>();
  private last = 0;
  /** The host dies while forgetting an answered write: the next forget fails and changes nothing. */
  crashOnForget = false;

  async load(): Promise<Op[]> {
    return [...this.rows.values()].map((op) => structuredClone(op));
  }

  async append(ops: Unsequenced<Op>[]): Promise<Op[]> {
    return ops.map((op) => {
      const stored = { ...op, seq: (this.last += 1) } as Op;
      this.rows.set(stored.seq, structuredClone(stored));
      return stored;
    });
  }

  async replace(op: Op): Promise<void> {
    this.rows.set(op.seq, structuredClone(op));
  }

  async forget(sent: Op): Promise<void> {
    if (this.crashOnForget) {
      this.crashOnForget = false;
      throw new Error("storage closed");
    }
    const current = this.rows.get(sent.seq);
    if (current && JSON.stringify(current) !== JSON.stringify(sent)) return;
    this.rows.delete(sent.seq);
  }

  ids(): string[] {
    return [...this.rows.values()].sort((a, b) => a.seq - b.seq).map((op) => `${op.kind} ${op.id}`);
  }
}

/** The scripted server keeping bookmarks: PUT merges fields, DELETE removes; `status` answers a PUT of that id. */
function library(statuses: Record<string, number> = {}) {
  const server = new ScriptedServer("http://server.test");
  const records = new Map<string, Record<string, unknown>>();
  const idOf = (path: string): string => decodeURIComponent(path.split("/").pop()!);
  server.on("PUT /v1/bookmarks/*", (r) => {
    const id = idOf(r.path);
    const status = statuses[id];
    if (status) return json(status, { code: `status-${status}`, message: `Answered ${status}.` });
    records.set(id, { ...records.get(id), ...(r.body as Record<string, unknown>) });
    return json(200, { data: records.get(id) });
  });
  server.on("DELETE /v1/bookmarks/*", (r) => (records.delete(idOf(r.path)), json(204, null)));
  return { server, records };
}

/** Sends one op with the client core's API client: an error answer is ApiError, no connection OfflineError. */
function sender(server: ScriptedServer) {
  const api = new ApiClient({ baseUrl: () => "http://server.test", fetch: server.fetch }, { token: async () => "t", refresh: async () => "t" });
  return async (op: Op): Promise<void> => {
    if (op.kind === "put") await api.putBookmark(op.id, op.fields as { url: string });
    else await api.deleteBookmark(op.id);
  };
}

const put = (id: string, fields: Record<string, unknown> = {}): Unsequenced<Op> => ({ kind: "put", id, fields: { url: `https://${id}.test/`, ...fields } });
const del = (id: string): Unsequenced<Op> => ({ kind: "delete", id });
const sentCalls = (server: ScriptedServer): string[] => server.seen.map((r) => `${r.method} ${r.path}`);

test("writes are sent in the order made and forgotten as answered", async () => {
  const { server } = library();
  const storage = new MemoryStorage();
  const queue = new WriteQueue(storage);
  for (const op of [put("a"), del("a"), put("b")]) await queue.add([op]);
  assert.deepEqual(queue.ops.map((op) => op.seq), [1, 2, 3]);
  assert.deepEqual(await queue.flush(sender(server)), { sent: 3, refused: 0, left: 0 });
  assert.deepEqual(sentCalls(server), ["PUT /v1/bookmarks/a", "DELETE /v1/bookmarks/a", "PUT /v1/bookmarks/b"]);
  assert.deepEqual([storage.ids(), queue.ops], [[], []]);
});

test("an edit folds into the queued PUT of its record; a delete, another record or an in-flight PUT keeps it apart", async () => {
  const { server, records } = library();
  const storage = new MemoryStorage();
  const queue = new WriteQueue(storage, { fold: foldEdits<Op>(["put"]) });
  await queue.add([put("a", { title: "1" })]);
  await queue.add([put("a", { notes: "N", title: "2" })]);
  assert.deepEqual([...storage.rows.values()], [{ seq: 1, kind: "put", id: "a", fields: { url: "https://a.test/", title: "2", notes: "N" } }]);
  await queue.add([del("a")]);
  await queue.add([put("a", { title: "again" })]); // after the delete: a PUT of its own, in order
  await queue.add([put("b")]);
  assert.deepEqual(storage.ids(), ["put a", "delete a", "put a", "put b"]);
  // An edit made while the PUT it would fold into is being sent is queued after it.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const send = sender(server);
  const flushing = queue.flush(async (op) => {
    if (op.id === "b") await held;
    return send(op);
  });
  while (queue.inFlight !== 4) await new Promise((resolve) => setTimeout(resolve, 1));
  await queue.add([put("b", { title: "B2" })]);
  release();
  assert.deepEqual(await flushing, { sent: 5, refused: 0, left: 0 });
  assert.deepEqual(server.seen.filter((r) => r.path.endsWith("/b")).map((r) => r.body), [{ url: "https://b.test/" }, { url: "https://b.test/", title: "B2" }]);
  assert.deepEqual([records.get("a")?.title, records.get("b")?.title], ["again", "B2"]);
});

test("a full queue refuses a new write with a visible error and keeps every write it holds", async () => {
  const { server } = library();
  const storage = new MemoryStorage();
  const queue = new WriteQueue(storage, { bound: 3 });
  for (const id of ["a", "b", "c"]) await queue.add([put(id)]);
  await assert.rejects(queue.add([put("d")]), (e) => e instanceof QueueFull && e.message === "Too many changes are waiting to be sent. Try again once you're back online.");
  await assert.rejects(queue.add([del("x"), del("y")]), QueueFull);
  assert.deepEqual(storage.ids(), ["put a", "put b", "put c"]);
  assert.deepEqual(queue.ops.map((op) => op.id), ["a", "b", "c"]);
  await queue.flush(sender(server)); // sent: the queue takes writes again
  await queue.add([put("d")]);
  assert.deepEqual(storage.ids(), ["put d"]);
});

test("a write the server refuses for good is dropped and reported; the writes behind it are sent", async () => {
  const { server } = library({ bad: 400, gone: 404 });
  const storage = new MemoryStorage();
  const queue = new WriteQueue(storage);
  for (const op of [put("bad"), put("a"), put("gone")]) await queue.add([op]);
  const reported: string[] = [];
  const result = await queue.flush(sender(server), { refused: (op, error) => void reported.push(`${op.id} ${error.status} ${error.code}`) });
  assert.deepEqual(result, { sent: 1, refused: 2, left: 0 });
  assert.deepEqual(reported, ["bad 400 status-400", "gone 404 status-404"]);
  assert.deepEqual(storage.ids(), []);
});

test("offline, a retryable answer or a session to renew stops the flush and keeps that write and the rest", async () => {
  for (const [status, kind] of [[0, OfflineError], [503, ApiError], [429, ApiError], [408, ApiError], [401, ApiError]] as const) {
    const { server, records } = library(status ? { b: status } : {});
    const storage = new MemoryStorage();
    const queue = new WriteQueue(storage);
    for (const op of [put("a"), put("b"), put("c")]) await queue.add([op]);
    const send = sender(server);
    const result = await queue.flush(async (op) => {
      server.offline = status === 0 && op.id === "b";
      return send(op);
    });
    assert.ok(result.stoppedBy instanceof kind, String(status));
    assert.deepEqual([result.sent, result.refused, result.left], [1, 0, 2], String(status));
    assert.deepEqual(storage.ids(), ["put b", "put c"], String(status));
    assert.deepEqual([...records.keys()], ["a"], `${status}: nothing behind the stopped write was sent`);
  }
});

test("a crash between the answer and the forgetting sends the write again after a reload; the server ends the same", async () => {
  const { server, records } = library();
  const storage = new MemoryStorage();
  const queue = new WriteQueue(storage);
  await queue.add([put("a", { title: "A" })]);
  await queue.add([del("gone")]);
  storage.crashOnForget = true;
  await assert.rejects(queue.flush(sender(server)), /storage closed/);
  assert.deepEqual(storage.ids(), ["put a", "delete gone"], "the answered write is still stored");
  const reloaded = new WriteQueue(storage);
  await reloaded.load();
  assert.deepEqual(await reloaded.flush(sender(server)), { sent: 2, refused: 0, left: 0 });
  assert.deepEqual(sentCalls(server), ["PUT /v1/bookmarks/a", "PUT /v1/bookmarks/a", "DELETE /v1/bookmarks/gone"]);
  assert.deepEqual([...records.entries()], [["a", { url: "https://a.test/", title: "A" }]]);
  assert.deepEqual(storage.ids(), []);
});
