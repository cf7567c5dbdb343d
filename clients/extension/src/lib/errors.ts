/** What can go wrong talking to the server, in kinds the UI words differently. The API's errors and the
 * retry policy are the client core's (clients/shared/errors.ts); signing in is the extension's own. */

import { ApiError, OfflineError } from "../../../../clients/shared/errors.ts";

export { ApiError, OfflineError } from "../../../../clients/shared/errors.ts";

export class NotSignedIn extends Error {
  override name = "NotSignedIn";
}

/** The server refused the refresh token: this device has to sign in again. */
export class SessionExpired extends NotSignedIn {
  override name = "SessionExpired";
}

/** The offline queue holds MAX_QUEUED_WRITES writes: a new one is refused, and the person told, rather
 * than an older one dropped without a word (the client core's error). */
export { QueueFull } from "../../../../clients/shared/queue.ts";

/** A short sentence for the popup, the badge's tooltip and the options page. */
export function describeError(error: unknown): string {
  if (error instanceof SessionExpired) return "Your session ended. Sign in again in the options.";
  if (error instanceof NotSignedIn) return "Sign in first, in the options.";
  if (error instanceof OfflineError) return "Can't reach the server right now.";
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
