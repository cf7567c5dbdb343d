// The client core's refresh-token rotation (clients/shared/session.ts), run by `make web-test` and `make extension-test`; each
// client's session tests run it through their own storage and lock.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError, OfflineError } from "../errors.ts";
import type { Session } from "../model.ts";
import { type LockRunner, SessionRotation, type SessionStorage } from "../session.ts";

/** One process's lock: tasks of the same name run one after another. */
function queueLock(): LockRunner {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(name: string, task: () => Promise<T>): Promise<T> => {
    const run = (tails.get(name) ?? Promise.resolve()).then(task, task);
    tails.set(name, run.catch(() => undefined));
    return run;
  };
}

const user = { id: "u1", isAnonymous: true, displayName: null, email: null, photoUrl: null, isPro: false };

/** A refresh endpoint with single-use tokens, as the server's: a reused token is refused. */
function server(status = 200) {
  const presented: string[] = [];
  let issued = 1;
  const send = async (token: string): Promise<Response> => {
    const reused = presented.includes(token);
    presented.push(token);
    if (reused || status === 401) return new Response(JSON.stringify({ code: "invalid-refresh-token", message: "Sign in again." }), { status: 401 });
    if (status !== 200) return new Response(JSON.stringify({ code: "unavailable", message: "Later." }), { status });
    issued += 1;
    await new Promise((resolve) => setTimeout(resolve, 1)); // an answer takes a while: callers overlap
    return new Response(JSON.stringify({ accessToken: `access-${issued}`, refreshToken: `refresh-${issued}`, user } satisfies Session));
  };
  return { presented, send };
}

function memoryStorage(shareAccess: boolean): SessionStorage & { refresh: string | null; access: string | null } {
  const storage = {
    refresh: "refresh-1" as string | null,
    access: "access-1" as string | null,
    refreshToken: async () => storage.refresh,
    save: async (session: Session) => {
      storage.refresh = session.refreshToken;
      storage.access = session.accessToken;
    },
    clear: async () => {
      storage.refresh = storage.access = null;
    },
  };
  return shareAccess ? Object.assign(storage, { accessToken: async () => storage.access }) : storage;
}

test("rotations at once run one after another, each presenting the token the last one stored", async () => {
  const endpoint = server();
  const storage = memoryStorage(false);
  const rotation = new SessionRotation({ storage, lock: queueLock(), send: endpoint.send });
  const sessions = await Promise.all([rotation.rotate(), rotation.rotate(), rotation.rotate()]);
  assert.deepEqual(endpoint.presented, ["refresh-1", "refresh-2", "refresh-3"], "no token presented twice");
  assert.deepEqual(sessions.map((s) => s.accessToken), ["access-2", "access-3", "access-4"]);
  assert.equal(storage.refresh, "refresh-4");
});

test("a replacement of a token another page already replaced takes theirs and spends nothing", async () => {
  const endpoint = server();
  const storage = memoryStorage(true);
  const rotation = new SessionRotation({ storage, lock: queueLock(), send: endpoint.send });
  const tokens = await Promise.all([rotation.replace("access-1"), rotation.replace("access-1"), rotation.replace(null)]);
  assert.deepEqual(tokens, ["access-2", "access-2", "access-2"]);
  assert.deepEqual(endpoint.presented, ["refresh-1"]);
});

test("a refused refresh token forgets the session; an outage or no connection keeps it", async () => {
  const storage = memoryStorage(false);
  await assert.rejects(new SessionRotation({ storage, lock: queueLock(), send: server(503).send }).rotate(), (e) => e instanceof ApiError && e.status === 503);
  assert.equal(storage.refresh, "refresh-1");
  const offline = async (): Promise<Response> => Promise.reject(new OfflineError());
  await assert.rejects(new SessionRotation({ storage, lock: queueLock(), send: offline }).rotate(), OfflineError);
  assert.equal(storage.refresh, "refresh-1");
  const refused = new SessionRotation({ storage, lock: queueLock(), send: server(401).send });
  await assert.rejects(refused.rotate(), (e) => e instanceof ApiError && e.code === "invalid-refresh-token");
  assert.equal(storage.refresh, null);
  await assert.rejects(refused.rotate(), (e) => e instanceof ApiError && e.status === 401 && e.code === "signed-out");
});
