// HTTP to the gateway (same origin), with the client core's errors and retry policy (clients/shared/errors.ts):
// errors are {code, message}; a failed fetch is Offline.

import { ApiError, OfflineError, RETRYABLE_STATUSES, fetchOrOffline } from "../../clients/shared/errors.ts";

export { ApiError, OfflineError as Offline };

/** The statuses whose request is sent again later (408, 429, 5xx); a 401 is the session's, see session.ts. */
export const TRANSIENT: ReadonlySet<number> = RETRYABLE_STATUSES;

export function errorOf(response: Response): Promise<ApiError> {
  return ApiError.fromResponse(response);
}

export function send(path: string, init: RequestInit = {}, token?: string): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token) headers.set("Authorization", `Bearer ${token}`);
  if (init.body && typeof init.body === "string") headers.set("Content-Type", "application/json");
  return fetchOrOffline(fetch, path, { ...init, headers, cache: "no-store" });
}
