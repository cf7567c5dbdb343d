/// <reference lib="webworker" />
// The service worker: keeps this build's shell and assets so the app opens with no network.
// Hashed assets are answered from the cache; the shell is fetched fresh when possible (so a new
// build shows on the next visit) and from the cache when not. The API is never cached here.

import { ApiError } from "./api.ts";
import { Db } from "./db.ts";
import { type RefreshReply, rotateStored } from "./session.ts";

declare const __OFFLINE_FILES__: string[];
declare const __BUILD_VERSION__: string;

const sw = self as unknown as ServiceWorkerGlobalScope;
const CACHE = `bookmarks-${__BUILD_VERSION__}`;

sw.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(__OFFLINE_FILES__))
      .then(() => sw.skipWaiting()),
  );
});

sw.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith("bookmarks-") && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => sw.clients.claim()),
  );
});

async function shell(request: Request): Promise<Response> {
  try {
    const response = await fetch(request);
    if (response.ok) return response;
    throw new Error(String(response.status));
  } catch {
    const cached = await caches.match("/", { cacheName: CACHE });
    return cached ?? Response.error();
  }
}

sw.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== sw.location.origin || url.pathname.startsWith("/v1/")) return;
  if (request.mode === "navigate" && url.pathname === "/") {
    event.respondWith(shell(request));
    return;
  }
  if (url.pathname.startsWith("/app/")) {
    event.respondWith(caches.match(request, { cacheName: CACHE }).then((hit) => hit ?? fetch(request)));
  }
});

// Token rotation on behalf of the pages: the worker finishes it even when the page that asked is
// reloaded or closed meanwhile, so the new pair is always stored and the old token never reused.
sw.addEventListener("message", (event) => {
  const port = event.ports[0];
  if (!port || (event.data as { type?: string } | null)?.type !== "refresh-session") return;
  const work = Db.open()
    .then(async (db) => {
      try {
        return { ok: true, session: await rotateStored(db) } satisfies RefreshReply;
      } finally {
        db.close();
      }
    })
    .catch((error: unknown): RefreshReply => {
      if (error instanceof ApiError) return { ok: false, status: error.status, code: error.code, message: error.message };
      return { ok: false, status: 0, code: "offline", message: "You're offline." };
    })
    .then((reply) => port.postMessage(reply));
  event.waitUntil(work);
});
