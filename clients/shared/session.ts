// Refresh-token rotation under the session lock, for the web app and the extension (decision 0149).
//
// Refresh tokens are single-use and a reused one revokes every token of the sign-in (decision 0008), so a
// rotation runs under one lock shared by every page and worker of the client, reads the stored refresh
// token inside it, presents it once, and stores the new pair before anything can use or lose it. Each
// client brings its storage (the web app: IndexedDB; the extension: storage.local and storage.session)
// and its lock (Web Locks; one process's queue in unit tests).

import { ApiError } from "./errors.ts";
import type { Session } from "./model.ts";

/** Runs `task` while holding the lock `name`, shared by every page and worker of the client. */
export type LockRunner = <T>(name: string, task: () => Promise<T>) => Promise<T>;

export const SESSION_LOCK = "bookmarks-session";

export interface SessionStorage {
  /** The stored refresh token; null when signed out. */
  refreshToken(): Promise<string | null>;
  /** Keeps a new pair, before it is used. */
  save(session: Session): Promise<void>;
  /** Forgets the session: the server refused its refresh token. */
  clear(): Promise<void>;
  /** The access token stored for every page of the client, when the client shares one (the extension). */
  accessToken?(): Promise<string | null>;
}

export interface RotationDeps {
  storage: SessionStorage;
  lock: LockRunner;
  /** Sends `POST /v1/auth/refresh` with the token; a server out of reach throws OfflineError. */
  send(refreshToken: string): Promise<Response>;
}

export class SessionRotation {
  private readonly deps: RotationDeps;

  constructor(deps: RotationDeps) {
    this.deps = deps;
  }

  /** Runs `task` under the session lock: a sign-in or a sign-out takes it too, so no rotation straddles one. */
  locked<T>(task: () => Promise<T>): Promise<T> {
    return this.deps.lock(SESSION_LOCK, task);
  }

  /** One rotation of the stored refresh token. Nothing stored: ApiError 401 `signed-out`. A refused token
   * (401) forgets the session and throws the server's error; other failures keep it for another try. */
  rotate(): Promise<Session> {
    return this.locked(() => this.rotateLocked());
  }

  /** An access token replacing `stale` (null: there was none): the stored one when another page or the
   * worker already replaced it while this one waited for the lock, else a rotation's. */
  replace(stale: string | null): Promise<string> {
    return this.locked(async () => {
      const current = (await this.deps.storage.accessToken?.()) ?? null;
      if (current && current !== stale) return current;
      return (await this.rotateLocked()).accessToken;
    });
  }

  private async rotateLocked(): Promise<Session> {
    const { storage } = this.deps;
    const refreshToken = await storage.refreshToken();
    if (refreshToken === null) throw new ApiError(401, "signed-out", "You're signed out.");
    const response = await this.deps.send(refreshToken);
    if (!response.ok) {
      const error = await ApiError.fromResponse(response);
      if (error.status === 401) await storage.clear();
      throw error;
    }
    const session = (await response.json()) as Session;
    // The old refresh token is spent: the new pair is stored before anything else can fail.
    await storage.save(session);
    return session;
  }
}
