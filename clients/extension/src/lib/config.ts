/** Fixed figures of the extension, in one place. */

export const DEFAULT_SERVER_URL = "http://127.0.0.1:8080";

/** The server refuses a capture whose `html` is larger than this (UTF-8 bytes). */
export const MAX_CAPTURE_HTML_BYTES = 10 * 1024 * 1024;

/** How long a lookup answer may mark a page as saved or not before it is asked again. */
export const LOOKUP_TTL_MS = 60_000;

/** Lookups remembered for the badge; the oldest go first. */
export const LOOKUP_CACHE_ENTRIES = 200;

/** Refresh an access token this long before its `exp`: the request still has to reach the server. */
export const EXPIRY_SKEW_SECONDS = 15;

/** Writes kept while offline; past this a new one is refused with QueueFull (none is ever dropped). */
export const MAX_QUEUED_WRITES = 500;

/** Records per delta page when the collection list is synced. */
export const DELTA_PAGE_LIMIT = 500;

/** Minutes between two retries of the offline queue (the `alarms` API's smallest period is 1 minute in Firefox and in Chromium's packed builds). */
export const QUEUE_RETRY_MINUTES = 1;

export const BADGE_SAVED_TEXT = "✓";
export const BADGE_SAVED_COLOR = "#1a7f37";
