// One API client for the web app and the extension (decision 0149): the server's address and fetch as the
// host's adapters, the access token from the host's session (its refresh is the client core's rotation,
// session.ts), and the client core's error policy (errors.ts): a failed fetch is OfflineError, an answer
// that is not 2xx an ApiError with the body's `code` and `message`, and a 401 refreshes once and sends again.

import { ApiError, type AccessTokens, OfflineError, fetchOrOffline, withOneRefresh } from "./errors.ts";
import type { Bookmark, BookmarkUpsert, Collection, CollectionUpsert, DeltaPage, Highlight, HighlightUpsert } from "./model.ts";

/** Where and how a host sends requests. */
export interface Endpoint {
  /** The server's origin, prefixed to every path ("" for the web app, which talks to its own origin). */
  baseUrl(): string | Promise<string>;
  fetch: typeof fetch;
  /** Request options the host adds to every request (the web app: `cache: "no-store"`). */
  init?: RequestInit;
  /** The error of a request that could not reach `url`; by default OfflineError's own sentence. */
  offline?: (error: unknown, url: string) => OfflineError;
}

/** Sends `path` to the endpoint, with the bearer `token` when given; a string body is sent as JSON. */
export async function send(endpoint: Endpoint, path: string, init: RequestInit = {}, token?: string): Promise<Response> {
  const headers = new Headers(endpoint.init?.headers);
  new Headers(init.headers).forEach((value, name) => headers.set(name, value));
  if (token) headers.set("Authorization", `Bearer ${token}`);
  if (typeof init.body === "string") headers.set("Content-Type", "application/json");
  const url = (await endpoint.baseUrl()) + path;
  const offline = endpoint.offline;
  return fetchOrOffline(endpoint.fetch, url, { ...endpoint.init, ...init, headers }, offline && ((error) => offline(error, url)));
}

/** `response` when it is 2xx; else its ApiError, thrown. */
export async function accepted(response: Response): Promise<Response> {
  if (!response.ok) throw await ApiError.fromResponse(response);
  return response;
}

/** A JSON body for `init`. */
export function jsonBody(method: string, body: unknown): RequestInit {
  return { method, body: JSON.stringify(body) };
}

const recordPath = (family: string, id: string): string => `/v1/${family}/${encodeURIComponent(id)}`;

export class ApiClient {
  readonly endpoint: Endpoint;
  private readonly tokens: AccessTokens;

  constructor(endpoint: Endpoint, tokens: AccessTokens) {
    this.endpoint = endpoint;
    this.tokens = tokens;
  }

  /** The answer to an authenticated request, whatever its status: a 401 refreshes once and sends again. */
  authed(path: string, init: RequestInit = {}): Promise<Response> {
    return withOneRefresh(this.tokens, (token) => send(this.endpoint, path, init, token));
  }

  /** An authenticated request's 2xx answer; anything else is thrown as ApiError or OfflineError. */
  async call(path: string, init: RequestInit = {}): Promise<Response> {
    return accepted(await this.authed(path, init));
  }

  /** The JSON body of an authenticated request's 2xx answer. */
  async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    return (await (await this.call(path, init)).json()) as T;
  }

  /** The `data` of an authenticated request's 2xx answer. */
  async data<T>(path: string, init: RequestInit = {}): Promise<T> {
    return (await this.json<{ data: T }>(path, init)).data;
  }

  putBookmark(id: string, body: BookmarkUpsert): Promise<Bookmark> {
    return this.data(recordPath("bookmarks", id), jsonBody("PUT", body));
  }

  async deleteBookmark(id: string): Promise<void> {
    await this.call(recordPath("bookmarks", id), { method: "DELETE" });
  }

  putHighlight(id: string, body: HighlightUpsert): Promise<Highlight> {
    return this.data(recordPath("highlights", id), jsonBody("PUT", body));
  }

  async deleteHighlight(id: string): Promise<void> {
    await this.call(recordPath("highlights", id), { method: "DELETE" });
  }

  putCollection(id: string, body: CollectionUpsert): Promise<Collection> {
    return this.data(recordPath("collections", id), jsonBody("PUT", body));
  }

  async deleteCollection(id: string): Promise<void> {
    await this.call(recordPath("collections", id), { method: "DELETE" });
  }

  /** One delta page after `cursor` (null: from the start). */
  delta(cursor: string | null, limit: number): Promise<DeltaPage> {
    const query = new URLSearchParams({ limit: String(limit) });
    if (cursor) query.set("cursor", cursor);
    return this.data(`/v1/bookmarks/delta?${query}`);
  }
}
