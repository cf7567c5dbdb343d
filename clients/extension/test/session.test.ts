import assert from "node:assert/strict";
import { test } from "node:test";

import { NotSignedIn, SessionExpired } from "../src/lib/errors.ts";
import { isNearlyExpired } from "../src/lib/jwt.ts";
import { jwt, signedIn } from "./fakes.ts";

test("concurrent callers without an access token share one refresh", async () => {
  const { server, memory, session } = await signedIn();
  await memory.remove("accessToken"); // the browser restarted: storage.session is empty
  const tokens = await Promise.all([session.accessToken(), session.accessToken(), session.accessToken()]);
  assert.equal(server.count("POST /v1/auth/refresh"), 1);
  assert.deepEqual(new Set(tokens), new Set(["access-2"]));
});

test("a refresh of a token someone already replaced uses theirs and spends nothing", async () => {
  const { server, session } = await signedIn();
  const token = await session.refresh("access-1"); // rotates to access-2
  assert.equal(await session.refresh("access-1"), token);
  assert.equal(server.count("POST /v1/auth/refresh"), 1);
});

test("each rotation stores the new refresh token, so no token is presented twice", async () => {
  const { server, session } = await signedIn();
  const second = await session.refresh("access-1");
  const third = await session.refresh(second);
  assert.equal(third, "access-3");
  assert.deepEqual(session.refreshes, ["refresh-1", "refresh-2"]);
  assert.equal((await session.account())?.refreshToken, "refresh-3");
  assert.equal(server.count("POST /v1/auth/refresh"), 2);
});

test("a refused refresh token ends the session on this device", async () => {
  const { server, session } = await signedIn();
  server.on("POST /v1/auth/refresh", () => new Response(JSON.stringify({ code: "invalid-refresh-token", message: "Sign in again." }), { status: 401 }));
  await assert.rejects(session.refresh("access-1"), SessionExpired);
  assert.equal(await session.account(), undefined);
  await assert.rejects(session.accessToken(), NotSignedIn);
});

test("an access token about to expire is refreshed before use, a fresh one is not", async () => {
  const now = 1_000_000;
  const { server, memory, session } = await signedIn(() => now * 1000);
  await memory.set("accessToken", jwt({ iat: now - 890, exp: now + 10 }));
  assert.equal(await session.accessToken(), "access-2");
  const fresh = jwt({ iat: now, exp: now + 900 });
  await memory.set("accessToken", fresh);
  assert.equal(await session.accessToken(), fresh);
  assert.equal(server.count("POST /v1/auth/refresh"), 1);
});

test("the refresh margin is at most a tenth of a short-lived token's life", () => {
  assert.equal(isNearlyExpired(jwt({ iat: 0, exp: 60 }), 53), false);
  assert.equal(isNearlyExpired(jwt({ iat: 0, exp: 60 }), 55), true);
  assert.equal(isNearlyExpired("not-a-jwt", 0), false);
});
