// The web app rotates its refresh token with the client core's rotation (clients/shared/session.ts), on its
// IndexedDB `meta` "session" and under Web Locks (node has them too).

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Db } from "../src/db.ts";
import { rotateStored } from "../src/session.ts";

const user = { id: "u1", isAnonymous: true, displayName: null, email: null, photoUrl: null, isPro: false };

function metaDb(): Db & { meta: Map<string, unknown> } {
  const meta = new Map<string, unknown>([["session", { refreshToken: "refresh-1", user }]]);
  const db = {
    meta,
    getMeta: async <T>(key: string) => meta.get(key) as T | undefined,
    setMeta: async (key: string, value: unknown) => void meta.set(key, structuredClone(value)),
    deleteMeta: async (key: string) => void meta.delete(key),
  };
  return db as unknown as Db & { meta: Map<string, unknown> };
}

test("rotations from two tabs at once present each stored refresh token once", async (t) => {
  const presented: string[] = [];
  t.mock.method(globalThis, "fetch", async (path: string, init: RequestInit) => {
    assert.equal(path, "/v1/auth/refresh");
    const token = (JSON.parse(String(init.body)) as { refreshToken: string }).refreshToken;
    presented.push(token);
    await new Promise((resolve) => setTimeout(resolve, 1));
    const n = presented.length + 1;
    return new Response(JSON.stringify({ accessToken: `access-${n}`, refreshToken: `refresh-${n}`, user }));
  });
  const db = metaDb();
  const sessions = await Promise.all([rotateStored(db), rotateStored(db)]);
  assert.deepEqual(presented, ["refresh-1", "refresh-2"]);
  assert.deepEqual(sessions.map((s) => s.accessToken), ["access-2", "access-3"]);
  assert.deepEqual(db.meta.get("session"), { refreshToken: "refresh-3", user });
});

test("a refused refresh token removes the stored session", async (t) => {
  t.mock.method(globalThis, "fetch", async () =>
    new Response(JSON.stringify({ code: "invalid-refresh-token", message: "Sign in again." }), { status: 401 }),
  );
  const db = metaDb();
  await assert.rejects(rotateStored(db), (e: { status?: number; code?: string }) => e.status === 401 && e.code === "invalid-refresh-token");
  assert.equal(db.meta.has("session"), false);
});
