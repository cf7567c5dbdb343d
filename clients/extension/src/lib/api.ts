/** Calls of the platform's API, with the access token and one refresh on a 401. Its wire types are the
 * client core's (clients/shared/model.ts, generated from docs/openapi.json). */

import { fetchOrOffline, withOneRefresh } from "../../../../clients/shared/errors.ts";
import { ApiError, OfflineError } from "./errors.ts";
import type {
  Bookmark,
  BookmarkUpsert as BookmarkWrite,
  CaptureRequest,
  DeltaPage,
  Highlight,
  HighlightUpsert as HighlightWrite,
  Session,
} from "../../../../clients/shared/model.ts";
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

type Method = "GET" | "PUT" | "POST" | "DELETE";

export class ApiClient {
  private readonly session: SessionManager;
  private readonly fetcher: typeof fetch;

  constructor(session: SessionManager, fetcher: typeof fetch) {
    this.session = session;
    this.fetcher = fetcher;
  }

  async putBookmark(id: string, body: BookmarkWrite): Promise<Bookmark> {
    const response = await this.call("PUT", `/v1/bookmarks/${encodeURIComponent(id)}`, body);
    return ((await response.json()) as { data: Bookmark }).data;
  }

  async deleteBookmark(id: string): Promise<void> {
    await this.call("DELETE", `/v1/bookmarks/${encodeURIComponent(id)}`);
  }

  /** The caller's live bookmark of this page (same normalized URL), or null. */
  async lookup(url: string): Promise<Bookmark | null> {
    try {
      const response = await this.call("GET", `/v1/bookmarks/lookup?url=${encodeURIComponent(url)}`);
      return ((await response.json()) as { data: Bookmark }).data;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  async putHighlight(id: string, body: HighlightWrite): Promise<Highlight> {
    const response = await this.call("PUT", `/v1/highlights/${encodeURIComponent(id)}`, body);
    return ((await response.json()) as { data: Highlight }).data;
  }

  async deleteHighlight(id: string): Promise<void> {
    await this.call("DELETE", `/v1/highlights/${encodeURIComponent(id)}`);
  }

  async capture(request: CaptureRequest): Promise<void> {
    await this.call("POST", "/v1/enrichment/capture", request);
  }

  async delta(cursor: string | null, limit: number): Promise<DeltaPage> {
    const query = new URLSearchParams({ limit: String(limit) });
    if (cursor) query.set("cursor", cursor);
    const response = await this.call("GET", `/v1/bookmarks/delta?${query}`);
    return ((await response.json()) as { data: DeltaPage }).data;
  }

  private async call(method: Method, path: string, body?: unknown): Promise<Response> {
    const tokens = { token: () => this.session.accessToken(), refresh: (rejected: string) => this.session.refresh(rejected) };
    const response = await withOneRefresh(tokens, (token) => this.send(method, path, token, body));
    if (!response.ok) throw await ApiError.fromResponse(response);
    return response;
  }

  private async send(method: Method, path: string, token: string, body: unknown): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const url = (await this.session.serverUrl()) + path;
    return fetchOrOffline(this.fetcher, url, init, (error) => new OfflineError(`Cannot reach the server: ${String(error)}`));
  }
}

/** Sign-in calls need no token: a new anonymous library, or a pairing code from another device. */
export async function signInRequest(
  fetcher: typeof fetch,
  serverUrl: string,
  pairingCode: string | null,
): Promise<Session> {
  const path = pairingCode === null ? "/v1/auth/anonymous" : "/v1/auth/pairing/claim";
  const init: RequestInit = { method: "POST" };
  if (pairingCode !== null) {
    init.headers = { "Content-Type": "application/json" };
    init.body = JSON.stringify({ code: pairingCode });
  }
  const response = await fetchOrOffline(fetcher, serverUrl + path, init, (error) => new OfflineError(`Cannot reach ${serverUrl}: ${String(error)}`));
  if (!response.ok) throw await ApiError.fromResponse(response);
  return (await response.json()) as Session;
}
