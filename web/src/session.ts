// The session: the refresh token lives in IndexedDB only, the access token in memory only.
// Refresh tokens are single-use (a second use revokes the whole family), so every refresh is the client
// core's rotation (clients/shared/session.ts): under one Web Lock for all tabs of this browser, the stored
// token re-read inside it, the new pair stored before anything uses it. A token is never presented twice
// by this device.

import { type LockRunner, SESSION_LOCK, SessionRotation } from "../../clients/shared/session.ts";
import { type ApiClient, ApiError, Offline, apiClient, errorOf, send } from "./api.ts";
import type { Db } from "./db.ts";
import type { Session, User } from "./model.ts";

interface Stored {
  refreshToken: string;
  user: User;
}

export { SESSION_LOCK };
const WORKER_REPLY_MS = 10_000;

/** Web Locks, shared by the tabs and the service worker; a browser without them runs the task at once. */
const withLock: LockRunner = <T>(name: string, work: () => Promise<T>): Promise<T> => {
  const locks = (navigator as Navigator & { locks?: LockManager }).locks;
  if (!locks) return work();
  return locks.request(name, work) as Promise<T>;
};

/** The rotation of the refresh token kept in IndexedDB (`meta` "session"). */
function rotation(db: Db): SessionRotation {
  return new SessionRotation({
    lock: withLock,
    storage: {
      refreshToken: async () => (await db.getMeta<Stored>("session"))?.refreshToken ?? null,
      save: (session) => db.setMeta("session", { refreshToken: session.refreshToken, user: session.user } satisfies Stored),
      clear: () => db.deleteMeta("session"),
    },
    send: (refreshToken) => send("/v1/auth/refresh", { method: "POST", body: JSON.stringify({ refreshToken }) }),
  });
}

export type RefreshReply = { ok: true; session: Session } | { ok: false; status: number; code: string; message: string };

/**
 * One rotation of the stored refresh token, under the session lock: reads the token inside the lock,
 * presents it once, stores the new pair before returning. Also run by the service worker, which
 * outlives a reload: a page closed mid-refresh cannot lose the new pair and reuse the old token.
 */
export async function rotateStored(db: Db): Promise<Session> {
  return rotation(db).rotate();
}

/** Asks the controlling service worker to rotate; null when there is none or it does not answer. */
function rotateInWorker(): Promise<RefreshReply | null> {
  const worker = typeof navigator !== "undefined" ? navigator.serviceWorker?.controller : null;
  if (!worker) return Promise.resolve(null);
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    const timer = setTimeout(() => resolve(null), WORKER_REPLY_MS);
    channel.port1.onmessage = (event: MessageEvent<RefreshReply>) => {
      clearTimeout(timer);
      resolve(event.data);
    };
    worker.postMessage({ type: "refresh-session" }, [channel.port2]);
  });
}

export class SessionManager {
  private access: string | null = null;
  private accessFrom: string | null = null; // the refresh token that produced ``access``
  private pending: Promise<string> | null = null;
  user: User | null = null;
  /** The client core's API client with this session's tokens. */
  readonly api: ApiClient;

  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
    this.api = apiClient(this);
  }

  async load(): Promise<boolean> {
    const stored = await this.db.getMeta<Stored>("session");
    this.user = stored?.user ?? null;
    return stored !== undefined;
  }

  private async adopt(session: Session): Promise<void> {
    await this.db.setMeta("session", { refreshToken: session.refreshToken, user: session.user } satisfies Stored);
    this.user = session.user;
    this.access = session.accessToken;
    this.accessFrom = session.refreshToken;
  }

  /** A new anonymous account, for a first visit. */
  async startAnonymous(): Promise<void> {
    const response = await send("/v1/auth/anonymous", { method: "POST" });
    if (!response.ok) throw await errorOf(response);
    await this.adopt((await response.json()) as Session);
  }

  /** Joins the library of a pairing code (a new device of the same user). */
  async claim(code: string): Promise<User> {
    const response = await send("/v1/auth/pairing/claim", { method: "POST", body: JSON.stringify({ code }) });
    if (!response.ok) throw await errorOf(response);
    const session = (await response.json()) as Session;
    await this.adopt(session);
    return session.user;
  }

  /** An access token: the one in memory, else one from a refresh. */
  async token(): Promise<string> {
    if (this.access) return this.access;
    return this.refresh(null);
  }

  /** Rotates the tokens once; ``rejected`` is the access token the server refused (null: none yet). */
  refresh(rejected: string | null): Promise<string> {
    if (rejected !== null && this.access !== rejected && this.access) return Promise.resolve(this.access);
    this.pending ??= this.rotate().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  private async rotate(): Promise<string> {
    const reply = await rotateInWorker();
    if (reply && !reply.ok) throw reply.code === "offline" ? new Offline() : new ApiError(reply.status, reply.code, reply.message);
    const session = reply?.ok ? reply.session : await rotateStored(this.db);
    this.user = session.user;
    this.access = session.accessToken;
    this.accessFrom = session.refreshToken;
    return session.accessToken;
  }

  /** Ends the token family on the server (best effort when offline) and forgets the session. */
  async signOut(): Promise<void> {
    const stored = await this.db.getMeta<Stored>("session");
    if (stored) {
      try {
        await send("/v1/auth/logout", { method: "POST", body: JSON.stringify({ refreshToken: stored.refreshToken }) });
      } catch {
        // Offline: the family then expires on its own; the device is cleared either way.
      }
    }
    this.access = this.accessFrom = null;
    this.user = null;
  }
}

/** fetch with the session's token; a 401 refreshes once and tries again. */
export function authed(session: SessionManager, path: string, init: RequestInit = {}): Promise<Response> {
  return session.api.authed(path, init);
}

export function authedJson<T>(session: SessionManager, path: string, init: RequestInit = {}): Promise<T> {
  return session.api.json<T>(path, init);
}
