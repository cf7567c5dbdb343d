// The session manager on an in-memory IndexedDB and the browser's Web Locks, against a scripted server
// whose refresh tokens work once (a reuse revokes the family, as docs/decisions/0008 says).

import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { authed } from "../src/session.ts";
import { FakeServer, browser, json, openTab, signedInTab, stored, timers } from "./fakes.ts";

let server: FakeServer;

beforeEach(() => {
  server = new FakeServer();
  browser(server);
});

/** The refresh tokens presented to the server, in order. */
function presented(): string[] {
  return server.seen.filter((r) => r.path === "/v1/auth/refresh").map((r) => (r.body as { refreshToken: string }).refreshToken);
}

async function storedSession(): Promise<{ refreshToken: string } | undefined> {
  const tab = await openTab();
  try {
    return await tab.db.getMeta<{ refreshToken: string }>("session");
  } finally {
    tab.db.close();
  }
}

test("concurrent refreshes of one page rotate once; a late caller with the refused token gets the new one", async () => {
  const tab = await signedInTab();
  server.expireAccessTokens();
  const [a, b, c] = await Promise.all([
    tab.session.refresh("access-1"),
    tab.session.refresh("access-1"),
    tab.session.refresh("access-1"),
  ]);
  assert.deepEqual([a, b, c], ["access-2", "access-2", "access-2"]);
  assert.deepEqual(presented(), ["refresh-1"]);
  assert.equal(await tab.session.refresh("access-1"), "access-2");
  assert.deepEqual(presented(), ["refresh-1"], "no second rotation for a token already replaced");
  assert.equal((await storedSession())?.refreshToken, "refresh-2", "the new pair is stored before use");
});

test("requests refused together with an expired token share one refresh and all go through", async () => {
  const tab = await signedInTab();
  server.expireAccessTokens();
  const responses = await Promise.all([1, 2, 3].map(() => authed(tab.session, "/v1/bookmarks/delta?limit=10")));
  assert.deepEqual(responses.map((r) => r.status), [200, 200, 200]);
  assert.deepEqual(presented(), ["refresh-1"]);
  assert.equal(server.revoked, false);
});

test("two pages refreshing at once rotate under the lock: no refresh token is presented twice", async () => {
  const first = await signedInTab();
  const second = await openTab(); // the same browser: it reads the stored session, no access token yet
  assert.equal(second.session.user?.id, "user-1");
  server.expireAccessTokens();
  const [a, b] = await Promise.all([first.session.refresh("access-1"), second.session.token()]);
  assert.deepEqual(presented(), ["refresh-1", "refresh-2"], "the second page read the token the first stored");
  assert.notEqual(a, b);
  assert.equal(server.revoked, false);
  assert.equal((await storedSession())?.refreshToken, "refresh-3");
  await first.sync.run(true);
  await second.sync.run(true);
  assert.deepEqual([first.sync.state, second.sync.state], ["synced", "synced"]);
  assert.deepEqual([first.signedOut, second.signedOut], [0, 0]);
});

test("a refresh token used elsewhere is refused: the device forgets the session and signs out, keeping its queue", async () => {
  const tab = await signedInTab();
  await tab.store.put("a", { url: "https://a.test/", title: "unsent" });
  // The stored token is presented by someone else first: the device's own use is a reuse.
  await server.fetch("/v1/auth/refresh", { method: "POST", body: JSON.stringify({ refreshToken: "refresh-1" }) });
  server.expireAccessTokens();
  await tab.sync.run(true);
  assert.deepEqual(presented(), ["refresh-1", "refresh-1"]);
  assert.equal(server.revoked, true, "the server saw the reuse");
  assert.equal(tab.signedOut, 1);
  assert.deepEqual([tab.sync.state, tab.sync.lastError], ["error", "Your session ended. Sign in again."]);
  assert.equal(await storedSession(), undefined, "the refused token is never presented again");
  assert.deepEqual((await stored()).queue.map((op) => op.id), ["a"], "the engine drops no write (the app decides)");

  // The next attempt finds no session: signed out again, nothing presented.
  await tab.sync.run(true);
  assert.deepEqual(presented(), ["refresh-1", "refresh-1"]);
  assert.equal(tab.signedOut, 2);
  assert.equal(tab.sync.lastError, "You're signed out.");
  assert.equal(timers.length, 0, "no retry is planned for a signed-out device");
});

test("a refresh that fails for a while keeps the session; the retry rotates it and the write goes through", async () => {
  const tab = await signedInTab();
  await tab.store.put("a", { url: "https://a.test/" });
  const refresh = server.routes.get("POST /v1/auth/refresh")!;
  server.on("POST /v1/auth/refresh", () => json(503, { code: "unavailable", message: "Later." }));
  server.expireAccessTokens();
  await tab.sync.run(true);
  assert.equal(tab.sync.state, "error");
  assert.equal(tab.signedOut, 0);
  assert.equal((await storedSession())?.refreshToken, "refresh-1");
  assert.deepEqual(timers.map((t) => t.ms), [10_000]);

  server.offline = true;
  await tab.sync.run(true);
  assert.equal(tab.sync.state, "offline");
  assert.equal((await storedSession())?.refreshToken, "refresh-1");

  server.offline = false;
  server.on("POST /v1/auth/refresh", refresh);
  await tab.sync.run(true);
  assert.equal(tab.sync.state, "synced");
  assert.deepEqual(presented(), ["refresh-1", "refresh-1"]);
  assert.equal(server.bookmark("a")?.url, "https://a.test/");
  assert.equal((await storedSession())?.refreshToken, "refresh-2");
});
