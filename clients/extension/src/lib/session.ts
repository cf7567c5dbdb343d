/** The signed-in device: server URL, tokens and their rotation.
 *
 * Refresh tokens are single-use and a reused one revokes every token of the sign-in, so a refresh
 * happens at most once per token however many pages and the worker hit a 401 at once: the refresh
 * runs under a lock shared by all of them, and whoever comes second finds the access token already
 * replaced and uses the new one. The refresh token lives in storage.local (it outlives the browser
 * session); the access token only in storage.session (memory, gone when the browser closes).
 */

import { DEFAULT_SERVER_URL } from "./config.ts";
import { ApiError, NotSignedIn, OfflineError, SessionExpired } from "./errors.ts";
import { isNearlyExpired } from "./jwt.ts";
import type { KeyValue, LockRunner } from "./kv.ts";

const SERVER_KEY = "serverUrl";
const ACCOUNT_KEY = "account";
const ACCESS_KEY = "accessToken";
const REFRESH_LOCK = "bookmarks-session";

export interface Account {
  userId: string;
  isAnonymous: boolean;
  refreshToken: string;
}

interface TokenPair {
  accessToken: string;
  refreshToken: string;
  user: { id: string; isAnonymous?: boolean };
}

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

  constructor(deps: SessionDeps) {
    this.deps = deps;
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
  refresh(stale: string | null): Promise<string> {
    return this.deps.lock(REFRESH_LOCK, () => this.refreshLocked(stale));
  }

  /** Starts a session from a sign-in answer (anonymous or pairing claim) on `serverUrl`. */
  async adopt(serverUrl: string, pair: TokenPair): Promise<Account> {
    const account = toAccount(pair);
    await this.deps.lock(REFRESH_LOCK, async () => {
      await this.deps.local.set(SERVER_KEY, serverUrl);
      await this.deps.local.set(ACCOUNT_KEY, account);
      await this.deps.memory.set(ACCESS_KEY, pair.accessToken);
    });
    return account;
  }

  async forget(): Promise<void> {
    await this.deps.lock(REFRESH_LOCK, async () => {
      await this.deps.local.remove(ACCOUNT_KEY);
      await this.deps.memory.remove(ACCESS_KEY);
    });
  }

  private async refreshLocked(stale: string | null): Promise<string> {
    const current = await this.deps.memory.get<string>(ACCESS_KEY);
    if (current && current !== stale) return current; // rotated by someone else while we waited
    const account = await this.account();
    if (!account) throw new NotSignedIn("Not signed in.");
    const response = await this.post("/v1/auth/refresh", { refreshToken: account.refreshToken });
    this.refreshes.push(account.refreshToken);
    if (response.status === 401) {
      await this.deps.local.remove(ACCOUNT_KEY);
      await this.deps.memory.remove(ACCESS_KEY);
      throw new SessionExpired((await ApiError.fromResponse(response)).message);
    }
    if (!response.ok) throw await ApiError.fromResponse(response);
    const pair = (await response.json()) as TokenPair;
    // The old refresh token is spent: store the new pair before anything else can fail.
    await this.deps.local.set(ACCOUNT_KEY, toAccount(pair));
    await this.deps.memory.set(ACCESS_KEY, pair.accessToken);
    return pair.accessToken;
  }

  private async post(path: string, body: unknown): Promise<Response> {
    const url = (await this.serverUrl()) + path;
    try {
      return await this.deps.fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    } catch (error) {
      throw new OfflineError(`Cannot reach ${url}: ${String(error)}`);
    }
  }

  private nowSeconds(): number {
    return (this.deps.now?.() ?? Date.now()) / 1000;
  }
}

function toAccount(pair: TokenPair): Account {
  return { userId: pair.user.id, isAnonymous: pair.user.isAnonymous ?? true, refreshToken: pair.refreshToken };
}
