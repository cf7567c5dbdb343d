// The client core's error and retry policy (clients/shared/errors.ts), run by `make web-test` and `make extension-test`; each
// client's own tests check that its API layer uses it.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError, OfflineError, fetchOrOffline, outcomeOf, retryAfterSeconds, withOneRefresh } from "../errors.ts";

const answer = (status: number, body: unknown = { code: "c", message: "m" }, headers: Record<string, string> = {}): Response =>
  new Response(typeof body === "string" ? body : JSON.stringify(body), { status, headers });

test("offline, 408, 429 and every 5xx are retried; a 401 asks for a sign-in; other refusals are final", () => {
  assert.equal(outcomeOf(new OfflineError()), "retry");
  for (const status of [408, 429, 500, 501, 502, 503, 504, 599]) assert.equal(outcomeOf(new ApiError(status, "c", "m")), "retry", String(status));
  assert.equal(outcomeOf(new ApiError(401, "unauthorized", "m")), "sign-in");
  for (const status of [400, 402, 403, 404, 405, 409, 410, 413, 422, 431]) assert.equal(outcomeOf(new ApiError(status, "c", "m")), "final", String(status));
  assert.equal(outcomeOf(new TypeError("a bug")), "retry", "an error of no known kind never loses a write");
});

test("an error answer carries the body's code and message, a proxy's page a generic sentence", async () => {
  const error = await ApiError.fromResponse(answer(409, { code: "conflict", message: "Taken." }));
  assert.deepEqual([error.status, error.code, error.message, error.retryAfter], [409, "conflict", "Taken.", null]);
  const proxy = await ApiError.fromResponse(answer(502, "<html>Bad gateway</html>"));
  assert.deepEqual([proxy.code, proxy.message], ["http-502", "The server answered 502."]);
  const limited = await ApiError.fromResponse(answer(429, { code: "rate-limited", message: "Slow down." }, { "Retry-After": "7" }));
  assert.equal(limited.retryAfter, 7);
});

test("Retry-After is seconds or an HTTP date; absent, past or unreadable is null", () => {
  const now = Date.parse("2026-11-28T12:00:00Z");
  assert.equal(retryAfterSeconds("30", now), 30);
  assert.equal(retryAfterSeconds("Sat, 28 Nov 2026 12:01:30 GMT", now), 90);
  assert.equal(retryAfterSeconds("Sat, 28 Nov 2026 11:00:00 GMT", now), null);
  assert.equal(retryAfterSeconds("0", now), null);
  assert.equal(retryAfterSeconds("soon", now), null);
  assert.equal(retryAfterSeconds(null, now), null);
});

test("a fetch that cannot reach the server is OfflineError, with the caller's sentence when given", async () => {
  const failing: typeof fetch = () => Promise.reject(new TypeError("Failed to fetch"));
  await assert.rejects(fetchOrOffline(failing, "/x", {}), (e) => e instanceof OfflineError && e.message === "You're offline.");
  await assert.rejects(fetchOrOffline(failing, "/x", {}, () => new OfflineError("No server.")), /No server\./);
});

test("a 401 refreshes once and sends again; a second 401 is returned, not looped", async () => {
  const sent: string[] = [];
  const refreshed: string[] = [];
  const tokens = { token: async () => "old", refresh: async (rejected: string) => (refreshed.push(rejected), "new") };
  const once = await withOneRefresh(tokens, async (token) => (sent.push(token), answer(token === "old" ? 401 : 200, {})));
  assert.equal(once.status, 200);
  assert.deepEqual([sent, refreshed], [["old", "new"], ["old"]]);
  sent.length = 0;
  const twice = await withOneRefresh(tokens, async (token) => (sent.push(token), answer(401)));
  assert.equal(twice.status, 401);
  assert.deepEqual(sent, ["old", "new"]);
  sent.length = 0;
  assert.equal((await withOneRefresh(tokens, async (token) => (sent.push(token), answer(403)))).status, 403);
  assert.deepEqual(sent, ["old"], "only a 401 refreshes");
});
