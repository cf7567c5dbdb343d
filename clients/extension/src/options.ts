/** The options page: the server, and signing this device in (pairing code or a new library) or out. */

import { signInRequest } from "./lib/api.ts";
import { DEFAULT_SERVER_URL } from "./lib/config.ts";
import { describeError } from "./lib/errors.ts";
import { storageArea, webLocks } from "./lib/kv.ts";
import { byId } from "./lib/dom.ts";
import { ask } from "./lib/messages.ts";
import { WriteQueue } from "./lib/queue.ts";
import { InvalidServerUrl, normalizeServerUrl, originPattern } from "./lib/server.ts";
import { SessionManager } from "./lib/session.ts";

const $ = byId;
const serverInput = $<HTMLInputElement>("server");
const codeInput = $<HTMLInputElement>("code");
const fetcher: typeof fetch = (input, init) => fetch(input, init);
const local = storageArea(chrome.storage.local);
const session = new SessionManager({ local, memory: storageArea(chrome.storage.session), lock: webLocks, fetch: fetcher });

function status(text: string, kind: "ok" | "error" | "" = ""): void {
  const element = $("status");
  element.textContent = text;
  element.className = kind;
}

async function render(): Promise<void> {
  const account = await session.account();
  serverInput.value = await session.serverUrl();
  serverInput.disabled = account !== undefined;
  $("signed-out").hidden = account !== undefined;
  $("signed-in").hidden = account === undefined;
  if (account) {
    $("who").textContent = `Signed in to your library on ${serverInput.value}.`;
  }
}

/** Asks for the server's host permission first: the browser only allows that during the click. */
async function signIn(code: string | null): Promise<void> {
  let origin: string;
  try {
    origin = normalizeServerUrl(serverInput.value || DEFAULT_SERVER_URL);
  } catch (error) {
    if (error instanceof InvalidServerUrl) return status(error.message, "error");
    throw error;
  }
  const granted = await chrome.permissions.request({ origins: [originPattern(origin)] });
  if (!granted) return status("The extension needs your permission to talk to the server.", "error");
  status("Signing in…");
  try {
    const previous = await session.account();
    const pair = await signInRequest(fetcher, origin, code);
    if (previous?.userId !== pair.user.id) await new WriteQueue(local, webLocks).clear();
    await session.adopt(origin, pair);
    await ask({ type: "account-changed" });
    status("You're signed in. Save pages from the toolbar button.", "ok");
  } catch (error) {
    status(describeError(error), "error");
  }
  await render();
}

async function signOut(): Promise<void> {
  const account = await session.account();
  const origin = await session.serverUrl();
  if (account) {
    // Ends this device's tokens on the server; signing out works offline too.
    await fetcher(`${origin}/v1/auth/logout`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ refreshToken: account.refreshToken }),
    }).catch(() => undefined);
  }
  await session.forget();
  await new WriteQueue(local, webLocks).clear();
  await ask({ type: "account-changed" });
  await chrome.permissions.remove({ origins: [originPattern(origin)] }).catch(() => false);
  status("Signed out.", "ok");
  await render();
}

$("claim-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const code = codeInput.value.trim();
  if (!code) return status("Enter the code shown on your other device.", "error");
  void signIn(code);
});
$("anonymous").addEventListener("click", () => void signIn(null));
$("sign-out").addEventListener("click", () => void signOut());
void render();
