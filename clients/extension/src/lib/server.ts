/** The server URL a person types, made into the origin the extension talks to and asks permission for. */

import { InvalidUrl, normalizeUrl } from "../../../../clients/shared/urls.ts";

export class InvalidServerUrl extends Error {}

/** `http(s)://host[:port]` without a path; anything else is refused with a sentence a person can act on. */
export function normalizeServerUrl(input: string): string {
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw new InvalidServerUrl("Enter a full address, like http://127.0.0.1:8080.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new InvalidServerUrl("The address must start with http:// or https://.");
  }
  if (url.username || url.password) {
    throw new InvalidServerUrl("The address must not contain a user name or password.");
  }
  if (url.pathname !== "/" || url.search || url.hash) {
    throw new InvalidServerUrl("Enter the server's address only, without a path.");
  }
  return url.origin;
}

/** The host permission pattern of exactly this server (scheme, host and port). */
export function originPattern(origin: string): string {
  return `${origin}/*`;
}

/** Why the server would refuse to save this page (a sentence to show), or null when it takes it: the server's
 * URL rule (clients/shared/urls.ts), so the browser's own pages and files, and URLs the server refuses, are
 * never sent or queued. */
export function saveProblem(url: string | undefined): string | null {
  if (!url || !/^https?:/i.test(url.trim())) return "Only web pages (http or https) can be saved.";
  try {
    normalizeUrl(url);
    return null;
  } catch (error) {
    if (error instanceof InvalidUrl) return error.message;
    throw error;
  }
}

/** Pages the extension can save: web pages whose URL the server takes. */
export function isSaveableUrl(url: string | undefined): url is string {
  return saveProblem(url) === null;
}
