// What can go wrong talking to the API and what a client does about it, one policy for the web app and the
// extension (decision 0149):
// - the server cannot be reached (a failed fetch), 408, 429 and every 5xx: "retry", the same request can
//   pass later; wait for Retry-After when the answer gives one;
// - 401: the API layer refreshes the tokens once and sends again (`withOneRefresh`); a 401 after that, or a
//   refused refresh token, is "sign-in": the session is over, writes are kept for after the sign-in;
// - any other answer that is not 2xx: "final", the same request would be refused again.

import type { ErrorBody } from "./model.ts";

/** The server could not be reached (no network, DNS, the server down). */
export class OfflineError extends Error {
  override name = "OfflineError";

  constructor(message = "You're offline.") {
    super(message);
  }
}

/** An answer that is not 2xx: its status, the body's `code` and `message`, Retry-After in seconds. */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly code: string;
  readonly retryAfter: number | null;

  constructor(status: number, code: string, message: string, retryAfter: number | null = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }

  /** The error of a failed answer; a body that is not the error contract (a proxy's page) keeps a generic sentence. */
  static async fromResponse(response: Response, now: number = Date.now()): Promise<ApiError> {
    let code = `http-${response.status}`;
    let message = `The server answered ${response.status}.`;
    try {
      const body: unknown = await response.json();
      if (isErrorBody(body)) ({ code, message } = body);
    } catch {
      // Not JSON: the status says enough.
    }
    return new ApiError(response.status, code, message, retryAfterSeconds(response.headers.get("retry-after"), now));
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== "object" || body === null) return false;
  const { code, message } = body as Record<string, unknown>;
  return typeof code === "string" && typeof message === "string";
}

/** Retry-After as seconds from `now`: a number of seconds or an HTTP date; null when absent, past or unreadable. */
export function retryAfterSeconds(header: string | null, now: number = Date.now()): number | null {
  if (header === null || header.trim() === "") return null;
  const seconds = /^\s*\d+\s*$/.test(header) ? Number(header) : (Date.parse(header) - now) / 1000;
  return Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds) : null;
}

/** The statuses whose request can pass unchanged later: 408, 429 and every 5xx. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([
  408,
  429,
  ...Array.from({ length: 100 }, (_, i) => 500 + i),
]);

export type Outcome = "retry" | "sign-in" | "final";

/** What to do after `error`, thrown by a call that already made its one refresh (see the top of this file).
 * An error of no known kind (a bug, a body that is not JSON) is retried: a write is never lost to it. */
export function outcomeOf(error: unknown): Outcome {
  if (!(error instanceof ApiError)) return "retry";
  if (error.status === 401) return "sign-in";
  return RETRYABLE_STATUSES.has(error.status) ? "retry" : "final";
}

/** `fetch`, with a request that could not reach the server thrown as OfflineError. */
export async function fetchOrOffline(
  fetcher: typeof fetch,
  url: string,
  init: RequestInit,
  offline: (error: unknown) => OfflineError = () => new OfflineError(),
): Promise<Response> {
  try {
    return await fetcher(url, init);
  } catch (error) {
    throw offline(error);
  }
}

/** The token source of an authenticated call: the current access token, and one refresh replacing a refused one. */
export interface AccessTokens {
  token(): Promise<string>;
  refresh(rejected: string): Promise<string>;
}

/** Sends with the current access token; a 401 refreshes once and sends again with the new one. The second
 * answer is returned whatever it is: a 401 again means the session is over, never a loop. */
export async function withOneRefresh(tokens: AccessTokens, send: (token: string) => Promise<Response>): Promise<Response> {
  const token = await tokens.token();
  const response = await send(token);
  if (response.status !== 401) return response;
  return send(await tokens.refresh(token));
}
