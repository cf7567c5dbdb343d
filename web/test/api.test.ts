// The web app's HTTP layer applies the client core's error and retry policy (clients/shared/errors.ts).

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError as CoreApiError, OfflineError, RETRYABLE_STATUSES } from "../../clients/shared/errors.ts";
import { ApiClient as CoreApiClient } from "../../clients/shared/api.ts";
import { ApiError, ENDPOINT, Offline, TRANSIENT, apiClient, errorOf, send } from "../src/api.ts";

test("the app's errors and retried statuses are the client core's", () => {
  assert.equal(ApiError, CoreApiError);
  assert.equal(Offline, OfflineError);
  assert.equal(TRANSIENT, RETRYABLE_STATUSES);
  for (const status of [408, 429, 500, 501, 503, 504]) assert.ok(TRANSIENT.has(status), String(status));
  for (const status of [400, 401, 403, 404, 409]) assert.ok(!TRANSIENT.has(status), String(status));
});

test("a failed fetch is Offline; an error answer is its code, message and Retry-After", async (t) => {
  t.mock.method(globalThis, "fetch", () => Promise.reject(new TypeError("Failed to fetch")));
  await assert.rejects(send("/v1/me"), (e) => e instanceof Offline && e.message === "You're offline.");
  const body = JSON.stringify({ code: "unavailable", message: "Try again soon." });
  const error = await errorOf(new Response(body, { status: 503, headers: { "Retry-After": "12" } }));
  assert.deepEqual([error.status, error.code, error.message, error.retryAfter], [503, "unavailable", "Try again soon.", 12]);
});

test("the app's requests go through the client core's API client, on its own origin and never from the cache", () => {
  const client = apiClient({ token: async () => "t", refresh: async () => "t" });
  assert.ok(client instanceof CoreApiClient);
  assert.equal(client.endpoint, ENDPOINT);
  assert.deepEqual([ENDPOINT.baseUrl(), ENDPOINT.init], ["", { cache: "no-store" }]);
});
