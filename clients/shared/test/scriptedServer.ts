/** The HTTP side of a scripted server for the clients' unit tests: routes by "METHOD /path" (a trailing
 * ``*`` matches a prefix), every request remembered, and a switch that makes fetch fail as offline does.
 * The web app's and the extension's fake servers extend it with what each scripts. */

export interface Seen {
  method: string;
  path: string;
  auth: string | null;
  body: unknown;
}

export type Handler = (request: Seen) => Response | Promise<Response>;

export function json(status: number, body: unknown): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

export class ScriptedServer {
  readonly seen: Seen[] = [];
  readonly routes = new Map<string, Handler>();
  offline = false;

  /** Resolves relative request URLs (the web app fetches its own origin's paths). */
  private readonly base: string | undefined;

  constructor(base?: string) {
    this.base = base;
  }

  on(route: string, handler: Handler): this {
    this.routes.set(route, handler);
    return this;
  }

  count(route: string): number {
    return this.seen.filter((r) => `${r.method} ${r.path.split("?")[0]}` === route).length;
  }

  readonly fetch: typeof fetch = async (input, init) => {
    if (this.offline) throw new TypeError("Failed to fetch");
    const url = new URL(String(input), this.base);
    const headers = new Headers(init?.headers);
    const request: Seen = {
      method: init?.method ?? "GET",
      path: url.pathname + url.search,
      auth: headers.get("Authorization"),
      body: typeof init?.body === "string" ? JSON.parse(init.body) : undefined,
    };
    this.seen.push(request);
    const handler = this.routes.get(`${request.method} ${url.pathname}`) ?? this.prefixRoute(request.method, url.pathname);
    return handler ? handler(request) : json(404, { code: "not-found", message: "No such route." });
  };

  private prefixRoute(method: string, path: string): Handler | undefined {
    for (const [route, handler] of this.routes) {
      if (route.endsWith("*") && `${method} ${path}`.startsWith(route.slice(0, -1))) return handler;
    }
    return undefined;
  }
}
