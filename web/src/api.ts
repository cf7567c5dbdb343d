// HTTP to the gateway (same origin). Errors are {code, message}; a failed fetch is Offline.

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retryAfter: number | null;

  constructor(status: number, code: string, message: string, retryAfter: number | null = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

export class Offline extends Error {
  constructor() {
    super("You're offline.");
  }
}

export const TRANSIENT = new Set([408, 429, 500, 502, 503, 504]);

export async function errorOf(response: Response): Promise<ApiError> {
  let code = `http-${response.status}`;
  let message = `The server answered ${response.status}.`;
  try {
    const body = (await response.json()) as { code?: unknown; message?: unknown };
    if (typeof body.code === "string") code = body.code;
    if (typeof body.message === "string") message = body.message;
  } catch {
    // Not JSON (a proxy's page): the status says enough.
  }
  const retry = Number(response.headers.get("retry-after"));
  return new ApiError(response.status, code, message, Number.isFinite(retry) && retry > 0 ? retry : null);
}

export async function send(path: string, init: RequestInit = {}, token?: string): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token) headers.set("Authorization", `Bearer ${token}`);
  if (init.body && typeof init.body === "string") headers.set("Content-Type", "application/json");
  try {
    return await fetch(path, { ...init, headers, cache: "no-store" });
  } catch {
    throw new Offline();
  }
}
