/** Calls of the platform's API: the client core's API client (clients/shared/api.ts) with this device's
 * server and session, plus the calls only the extension makes. Its wire types are the client core's
 * (clients/shared/model.ts, generated from docs/openapi.json). */

import { ApiClient as CoreClient, type Endpoint, accepted, jsonBody, send } from "../../../../clients/shared/api.ts";
import { ApiError, OfflineError } from "./errors.ts";
import type { Bookmark, CaptureRequest, Session } from "../../../../clients/shared/model.ts";
import type { SessionManager } from "./session.ts";

export type {
  Bookmark,
  CaptureRequest,
  Collection,
  DeltaPage,
  Highlight,
  HighlightColor,
  BookmarkUpsert as BookmarkWrite,
  HighlightUpsert as HighlightWrite,
} from "../../../../clients/shared/model.ts";

/** The server at `serverUrl` through `fetcher`; a request that cannot reach it says which URL. */
export function endpoint(serverUrl: () => string | Promise<string>, fetcher: typeof fetch): Endpoint {
  return {
    baseUrl: serverUrl,
    fetch: fetcher,
    offline: (error, url) => new OfflineError(`Cannot reach ${url}: ${String(error)}`),
  };
}

export class ApiClient extends CoreClient {
  constructor(session: SessionManager, fetcher: typeof fetch) {
    super(endpoint(() => session.serverUrl(), fetcher), {
      token: () => session.accessToken(),
      refresh: (rejected) => session.refresh(rejected),
    });
  }

  /** The caller's live bookmark of this page (same normalized URL), or null. */
  async lookup(url: string): Promise<Bookmark | null> {
    try {
      return await this.data<Bookmark>(`/v1/bookmarks/lookup?url=${encodeURIComponent(url)}`);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  async capture(request: CaptureRequest): Promise<void> {
    await this.call("/v1/enrichment/capture", jsonBody("POST", request));
  }
}

/** Sign-in calls need no token: a new anonymous library, or a pairing code from another device. */
export async function signInRequest(fetcher: typeof fetch, serverUrl: string, pairingCode: string | null): Promise<Session> {
  const server = endpoint(() => serverUrl, fetcher);
  const init = pairingCode === null ? { method: "POST" } : jsonBody("POST", { code: pairingCode });
  const path = pairingCode === null ? "/v1/auth/anonymous" : "/v1/auth/pairing/claim";
  const response = await accepted(await send(server, path, init));
  return (await response.json()) as Session;
}
