/** A scripted stand-in for the server's HTTP API, as seen through fetch; the real server is exercised
 * by the end-to-end tests in tests/e2e/extension. */

import { ApiClient, type Bookmark } from "../src/lib/api.ts";
import { MemoryKeyValue, localLocks } from "../src/lib/kv.ts";
import { SessionManager } from "../src/lib/session.ts";
import { ScriptedServer, json } from "../../../clients/shared/test/scriptedServer.ts";

export { json, type Seen } from "../../../clients/shared/test/scriptedServer.ts";

/** A bookmark as the server answers it: every wire field, `patch` over plain defaults. */
export function wireBookmark(patch: Partial<Bookmark> = {}): Bookmark {
  const at = "2026-11-28T00:00:00Z";
  return {
    ownerUid: "user-1", clientBookmarkId: "b1", url: "https://a.test/", normalizedUrl: "https://a.test/", domain: "a.test",
    title: null, description: null, thumbnailUrl: null, summary: null, saveWhy: null, tags: [], enrichmentStatus: "pending",
    snapshotStatus: "pending", lastErrorCode: null, isFavorite: false, collectionIds: [], userTags: [], isArchived: false,
    notes: null, clientSavedAt: null, lastOpenedAt: null, createdAt: at, updatedAt: at, enrichedAt: null, linkStatus: null,
    linkCheckedAt: null, linkMovedTo: null, canonicalUrl: null, ...patch,
  };
}

export function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part({ alg: "none" })}.${part(claims)}.sig`;
}

export class FakeServer extends ScriptedServer {
  /** Refresh tokens are single-use: the fake refuses a reuse like the real server. */
  private readonly spent = new Set<string>();
  private issued = 0;

  constructor() {
    super();
    this.routes.set("POST /v1/auth/refresh", (request) => {
      const token = (request.body as { refreshToken: string }).refreshToken;
      if (this.spent.has(token) || !token.startsWith("refresh-")) return json(401, { code: "invalid-refresh-token", message: "Sign in again." });
      this.spent.add(token);
      return json(200, this.pair());
    });
  }

  pair(): { accessToken: string; refreshToken: string; user: { id: string; isAnonymous: boolean } } {
    this.issued += 1;
    return { accessToken: `access-${this.issued}`, refreshToken: `refresh-${this.issued}`, user: { id: "user-1", isAnonymous: true } };
  }
}

export interface Harness {
  server: FakeServer;
  local: MemoryKeyValue;
  memory: MemoryKeyValue;
  session: SessionManager;
  api: ApiClient;
}

/** A signed-in device talking to a fresh FakeServer. */
export async function signedIn(now: () => number = Date.now): Promise<Harness> {
  const server = new FakeServer();
  const local = new MemoryKeyValue();
  const memory = new MemoryKeyValue();
  const lock = localLocks();
  const session = new SessionManager({ local, memory, lock, fetch: server.fetch, now });
  await session.adopt("http://server.test", server.pair());
  return { server, local, memory, session, api: new ApiClient(session, server.fetch) };
}
