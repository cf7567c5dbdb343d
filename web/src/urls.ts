// The server's URL rule (docs/api-guide.md, section 7) from the client core, clients/shared/urls.ts: it tells
// "already saved" before the server has answered, and refuses locally what the server would refuse. The
// server's normalizedUrl wins once it arrives.

import { InvalidUrl, normalizeUrl as normalize, normalizedUrlOrNull } from "../../clients/shared/urls.ts";

export { InvalidUrl };

/** The normalized URL, or null where the server would refuse ``text``. */
export function normalizeUrl(text: string): string | null {
  return normalizedUrlOrNull(text);
}

/** Why the server would refuse ``text`` (a sentence to show), or null when it would take it. */
export function urlProblem(text: string): string | null {
  try {
    normalize(text);
    return null;
  } catch (error) {
    if (error instanceof InvalidUrl) return error.message;
    throw error;
  }
}

/** A typed address without a scheme ("example.com/a") is taken as https. */
export function withScheme(text: string): string {
  const trimmed = text.trim();
  if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed)) return trimmed;
  return trimmed ? `https://${trimmed}` : trimmed;
}

/** The server's domain of ``text`` until the server's copy arrives, or null where it would refuse the URL. */
export function provisionalDomain(text: string): string | null {
  try {
    return normalize(text).domain;
  } catch (error) {
    if (error instanceof InvalidUrl) return null;
    throw error;
  }
}
