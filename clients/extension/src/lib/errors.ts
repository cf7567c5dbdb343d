/** What can go wrong talking to the server, in kinds the UI words differently. */

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.name = "ApiError";
  }

  static async fromResponse(response: Response): Promise<ApiError> {
    let code = "http-" + String(response.status);
    let message = `The server answered ${response.status}.`;
    try {
      const body: unknown = await response.json();
      if (isErrorBody(body)) ({ code, message } = body);
    } catch {
      // A body that is not the JSON error contract keeps the generic sentence.
    }
    return new ApiError(response.status, code, message);
  }
}

/** The server could not be reached (no network, server down, DNS): the write can wait in the queue. */
export class OfflineError extends Error {
  override name = "OfflineError";
}

export class NotSignedIn extends Error {
  override name = "NotSignedIn";
}

/** The server refused the refresh token: this device has to sign in again. */
export class SessionExpired extends NotSignedIn {
  override name = "SessionExpired";
}

function isErrorBody(body: unknown): body is { code: string; message: string } {
  if (typeof body !== "object" || body === null) return false;
  const { code, message } = body as Record<string, unknown>;
  return typeof code === "string" && typeof message === "string";
}

/** A short sentence for the popup and the options page. */
export function describeError(error: unknown): string {
  if (error instanceof SessionExpired) return "Your session ended. Sign in again in the options.";
  if (error instanceof NotSignedIn) return "Sign in first, in the options.";
  if (error instanceof OfflineError) return "Can't reach the server right now.";
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
