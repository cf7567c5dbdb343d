// HTTP to the gateway (same origin): the client core's API client and error policy (clients/shared/api.ts,
// clients/shared/errors.ts). Errors are {code, message}; a failed fetch is Offline.

import { ApiClient, type Endpoint, send as sendTo } from "../../clients/shared/api.ts";
import { ApiError, type AccessTokens, OfflineError, RETRYABLE_STATUSES } from "../../clients/shared/errors.ts";

export { ApiClient, ApiError, OfflineError as Offline };

/** The statuses whose request is sent again later (408, 429, 5xx); a 401 is the session's, see session.ts. */
export const TRANSIENT: ReadonlySet<number> = RETRYABLE_STATUSES;

/** The app's own origin, with the page's fetch of the moment, never from the HTTP cache. */
export const ENDPOINT: Endpoint = {
  baseUrl: () => "",
  fetch: (input, init) => fetch(input, init),
  init: { cache: "no-store" },
};

export function errorOf(response: Response): Promise<ApiError> {
  return ApiError.fromResponse(response);
}

/** A request to the gateway, with the bearer ``token`` when given. */
export function send(path: string, init: RequestInit = {}, token?: string): Promise<Response> {
  return sendTo(ENDPOINT, path, init, token);
}

/** The API client of a session's tokens. */
export function apiClient(tokens: AccessTokens): ApiClient {
  return new ApiClient(ENDPOINT, tokens);
}
