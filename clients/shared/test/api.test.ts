// The client core's API client (clients/shared/api.ts) against the scripted server, with its tokens from
// the client core's session rotation; run by `make web-test` and `make extension-test`. Each client's own
// tests check that its API layer is this client.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiClient, type Endpoint, send } from "../api.ts";
import { ApiError, OfflineError } from "../errors.ts";
import type { Session } from "../model.ts";
import { type LockRunner, SessionRotation } from "../session.ts";
import { ScriptedServer, json } from "./scriptedServer.ts";

const BASE = "http://server.test";
const user = { id: "u1", isAnonymous: true, displayName: null, email: null, photoUrl: null, isPro: false };
const oneAtATime: LockRunner = (_name, task) => task();

/** A server whose refresh tokens work once, and a client whose access token comes from a rotation of them. */
function signedIn() {
  const server = new ScriptedServer(BASE);
  let issued = 1;
  const spent = new Set<string>();
  server.on("POST /v1/auth/refresh", (r) => {
    const token = (r.body as { refreshToken: string }).refreshToken;
    if (spent.has(token)) return json(401, { code: "invalid-refresh-token", message: "Sign in again." });
    spent.add(token);
    issued += 1;
    return json(200, { accessToken: `access-${issued}`, refreshToken: `refresh-${issued}`, user } satisfies Session);
  });
  const stored = { refresh: "refresh-1" as string | null, access: "access-1" };
  const endpoint: Endpoint = { baseUrl: () => BASE, fetch: server.fetch };
  const rotation = new SessionRotation({
    lock: oneAtATime,
    storage: {
      refreshToken: async () => stored.refresh,
      save: async (session) => void Object.assign(stored, { refresh: session.refreshToken, access: session.accessToken }),
      clear: async () => void (stored.refresh = null),
      accessToken: async () => stored.access,
    },
    send: (refreshToken) => send(endpoint, "/v1/auth/refresh", { method: "POST", body: JSON.stringify({ refreshToken }) }),
  });
  const api = new ApiClient(endpoint, { token: async () => stored.access, refresh: (rejected) => rotation.replace(rejected) });
  return { server, api, stored };
}

const calls = (server: ScriptedServer): string[] => server.seen.map((r) => `${r.method} ${r.path} ${r.auth ?? "-"}`);

test("a 401 rotates the session once and sends again with the new token; a second 401 is the caller's", async () => {
  const { server, api, stored } = signedIn();
  server.on("PUT /v1/bookmarks/*", (r) =>
    r.auth === "Bearer access-1" ? json(401, { code: "unauthorized", message: "Expired." }) : json(200, { data: { url: "https://a.test/" } }),
  );
  assert.deepEqual(await api.putBookmark("a b", { url: "https://a.test/" }), { url: "https://a.test/" });
  assert.deepEqual(calls(server), ["PUT /v1/bookmarks/a%20b Bearer access-1", "POST /v1/auth/refresh -", "PUT /v1/bookmarks/a%20b Bearer access-2"]);
  assert.deepEqual(server.seen[2]?.body, { url: "https://a.test/" });
  assert.equal(stored.refresh, "refresh-2");
  server.seen.length = 0;
  server.on("DELETE /v1/highlights/*", () => json(401, { code: "unauthorized", message: "No." }));
  await assert.rejects(api.deleteHighlight("h1"), (e) => e instanceof ApiError && e.status === 401 && e.code === "unauthorized");
  assert.deepEqual(calls(server), ["DELETE /v1/highlights/h1 Bearer access-2", "POST /v1/auth/refresh -", "DELETE /v1/highlights/h1 Bearer access-3"]);
});

test("an error answer is an ApiError with the body's code and message; a proxy's page keeps a generic sentence", async () => {
  const { server, api } = signedIn();
  server.on("PUT /v1/highlights/*", () => json(422, { code: "invalid-highlight", message: "No quote." }));
  await assert.rejects(api.putHighlight("h1", { bookmarkId: "b1", quote: "" }), (e) => e instanceof ApiError && e.status === 422 && e.code === "invalid-highlight" && e.message === "No quote.");
  server.on("GET /v1/bookmarks/delta", () => new Response("<html>Bad gateway</html>", { status: 502, headers: { "Retry-After": "9" } }));
  await assert.rejects(api.delta(null, 10), (e) => e instanceof ApiError && e.code === "http-502" && e.retryAfter === 9);
  server.on("DELETE /v1/bookmarks/*", () => json(204, null));
  assert.equal(await api.deleteBookmark("a"), undefined);
});

test("a server out of reach is OfflineError, in the host's words when it gives them", async () => {
  const { server, api } = signedIn();
  server.offline = true;
  await assert.rejects(api.deleteBookmark("a"), (e) => e instanceof OfflineError && e.message === "You're offline.");
  const worded: Endpoint = { baseUrl: () => BASE, fetch: server.fetch, offline: (_error, url) => new OfflineError(`Cannot reach ${url}.`) };
  await assert.rejects(send(worded, "/v1/me"), (e) => e instanceof OfflineError && e.message === `Cannot reach ${BASE}/v1/me.`);
});

test("requests carry the host's options, JSON bodies their type, and a delta page its cursor and limit", async () => {
  const server = new ScriptedServer(BASE);
  const seen: RequestInit[] = [];
  const fetcher: typeof fetch = (input, init) => (seen.push(init ?? {}), server.fetch(input, init));
  const api = new ApiClient({ baseUrl: () => "", fetch: fetcher, init: { cache: "no-store" } }, { token: async () => "t", refresh: async () => "t" });
  server.on("GET /v1/bookmarks/delta", () => json(200, { data: { nextCursor: null } }));
  server.on("PUT /v1/collections/*", (r) => json(200, { data: r.body }));
  assert.deepEqual(await api.delta("pos-3", 50), { nextCursor: null });
  assert.deepEqual(await api.putCollection("c1", { name: "Reading" }), { name: "Reading" });
  assert.deepEqual(server.seen.map((r) => r.path), ["/v1/bookmarks/delta?limit=50&cursor=pos-3", "/v1/collections/c1"]);
  assert.deepEqual(seen.map((init) => [init.cache, new Headers(init.headers).get("Content-Type")]), [["no-store", null], ["no-store", "application/json"]]);
});
