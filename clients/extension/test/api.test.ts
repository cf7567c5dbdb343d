import assert from "node:assert/strict";
import { test } from "node:test";

import { ApiClient as CoreApiClient } from "../../../clients/shared/api.ts";
import { ApiError as CoreApiError, OfflineError as CoreOfflineError } from "../../../clients/shared/errors.ts";
import { ApiError, OfflineError } from "../src/lib/errors.ts";
import { json, signedIn } from "./fakes.ts";

test("a 401 is answered by one refresh and one retry with the new token", async () => {
  const { server, api } = await signedIn();
  server.on("GET /v1/bookmarks/lookup", (r) =>
    r.auth === "Bearer access-1" ? json(401, { code: "unauthorized", message: "Expired." }) : json(404, { code: "not-found", message: "No." }),
  );
  assert.equal(await api.lookup("https://a.test/"), null);
  assert.deepEqual(server.seen.map((r) => `${r.method} ${r.path.split("?")[0]} ${r.auth ?? ""}`), [
    "GET /v1/bookmarks/lookup Bearer access-1",
    "POST /v1/auth/refresh ",
    "GET /v1/bookmarks/lookup Bearer access-2",
  ]);
});

test("a second 401 after the refresh is an error, not a loop", async () => {
  const { server, api } = await signedIn();
  server.on("GET /v1/bookmarks/lookup", () => json(401, { code: "unauthorized", message: "No." }));
  await assert.rejects(api.lookup("https://a.test/"), (e) => e instanceof ApiError && e.status === 401);
  assert.equal(server.count("POST /v1/auth/refresh"), 1);
});

test("errors carry the server's code and message; an unreachable server is OfflineError", async () => {
  const { server, api } = await signedIn();
  server.on("GET /v1/bookmarks/lookup", () => json(400, { code: "invalid-url", message: "Not a URL." }));
  await assert.rejects(api.lookup("nope"), (e) => e instanceof ApiError && e.code === "invalid-url" && e.message === "Not a URL.");
  server.offline = true;
  await assert.rejects(api.lookup("https://a.test/"), OfflineError);
});

test("the extension's errors are the client core's", () => {
  assert.equal(ApiError, CoreApiError);
  assert.equal(OfflineError, CoreOfflineError);
});

test("the lookup asks for the page's URL, encoded", async () => {
  const { server, api } = await signedIn();
  server.on("GET /v1/bookmarks/lookup", () => json(404, { code: "not-found", message: "No." }));
  await api.lookup("https://a.test/?q=a&b=c#x");
  assert.equal(server.seen[0]?.path, "/v1/bookmarks/lookup?url=https%3A%2F%2Fa.test%2F%3Fq%3Da%26b%3Dc%23x");
});

test("the extension's API client is the client core's", async () => {
  const { api } = await signedIn();
  assert.ok(api instanceof CoreApiClient);
});
