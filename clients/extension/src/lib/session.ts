/** The signed-in device: server URL, tokens and their rotation.
 *
 * Refresh tokens are single-use and a reused one revokes every token of the sign-in, so a refresh
 * happens at most once per token however many pages and the worker hit a 401 at once: the refresh is
 * the client core's rotation (clients/shared/session.ts) under a lock shared by all of them, and whoever
 * comes second finds the access token already replaced and uses the new one. The refresh token lives in storage.local (it outlives the browser
 * session); the access token only in storage.session (memory, gone when the browser closes).
 */

import { jsonBody, send } from "../../../../clients/shared/api.ts";
import type { Session } from "../../../../clients/shared/model.ts";
import { SessionRotation } from "../../../../clients/shared/session.ts";
import { DEFAULT_SERVER_URL } from "./config.ts";
import { endpoint } from "./api.ts";
import { ApiError, NotSignedIn, SessionExpired } from "./errors.ts";
import { isNearlyExpired } from "./jwt.ts";
import type { KeyValue, LockRunner } from "./kv.ts";

const SERVER_KEY = "serverUrl";
const ACCOUNT_KEY = "account";
const ACCESS_KEY = "accessToken";

export interface Account {
  userId: string;
  isAnonymous: boolean;
  refreshToken: string;
}

/** What a sign-in answer must hold for this device (a full Session, or the fakes' smaller pair). */
type TokenPair = Pick<Session, "accessToken" | "refreshToken"> & { user: { id: string; isAnonymous?: boolean } };

export interface SessionDeps {
  local: KeyValue;
  memory: KeyValue;
  lock: LockRunner;
  fetch: typeof fetch;
  now?: () => number;
}

export class SessionManager {
  readonly refreshes: string[] = []; // refresh tokens spent by this manager (diagnostics and tests)

  private readonly deps: SessionDeps;
  private readonly rotation: SessionRotation;

  constructor(deps: SessionDeps) {
    this.deps = deps;
    this.rotation = new SessionRotation({
      lock: deps.lock,
      storage: {
        refreshToken: async () => (await this.account())?.refreshToken ?? null,
        save: (pair) => this.store(pair),
        clear: () => this.clear(),
        accessToken: async () => (await deps.memory.get<string>(ACCESS_KEY)) ?? null,
      },
      send: async (refreshToken) => {
        const response = await this.post("/v1/auth/refresh", { refreshToken });
        this.refreshes.push(refreshToken);
        return response;
      },
    });
  }

  async serverUrl(): Promise<string> {
    return (await this.deps.local.get<string>(SERVER_KEY)) ?? DEFAULT_SERVER_URL;
  }

  async account(): Promise<Account | undefined> {
    return this.deps.local.get<Account>(ACCOUNT_KEY);
  }

  /** A usable access token: the stored one, refreshed first when it is missing or about to expire. */
  async accessToken(): Promise<string> {
    const token = await this.deps.memory.get<string>(ACCESS_KEY);
    if (token && !isNearlyExpired(token, this.nowSeconds())) return token;
    return this.refresh(token ?? null);
  }

  /** Replaces `stale` (null: there was none); if another page or the worker already did, returns theirs. */
  async refresh(stale: string | null): Promise<string> {
    try {
      return await this.rotation.replace(stale);
    } catch (error) {
      if (error instanceof ApiError && error.code === "signed-out") throw new NotSignedIn("Not signed in.");
      if (error instanceof ApiError && error.status === 401) throw new SessionExpired(error.message);
      throw error;
    }
  }

  /** Starts a session from a sign-in answer (anonymous or pairing claim) on `serverUrl`. */
  async adopt(serverUrl: string, pair: TokenPair): Promise<Account> {
    const account = toAccount(pair);
    await this.rotation.locked(async () => {
      await this.deps.local.set(SERVER_KEY, serverUrl);
      await this.store(pair);
    });
    return account;
  }

  async forget(): Promise<void> {
    await this.rotation.locked(() => this.clear());
  }

  private async store(pair: TokenPair): Promise<void> {
    await this.deps.local.set(ACCOUNT_KEY, toAccount(pair));
    await this.deps.memory.set(ACCESS_KEY, pair.accessToken);
  }

  private async clear(): Promise<void> {
    await this.deps.local.remove(ACCOUNT_KEY);
    await this.deps.memory.remove(ACCESS_KEY);
  }

  private post(path: string, body: unknown): Promise<Response> {
    return send(endpoint(() => this.serverUrl(), this.deps.fetch), path, jsonBody("POST", body));
  }

  private nowSeconds(): number {
    return (this.deps.now?.() ?? Date.now()) / 1000;
  }
}

function toAccount(pair: TokenPair): Account {
  return { userId: pair.user.id, isAnonymous: pair.user.isAnonymous ?? true, refreshToken: pair.refreshToken };
}
