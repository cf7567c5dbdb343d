/** The server URL a person types, made into the origin the extension talks to and asks permission for. */

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

/** Pages the extension can save: the web, not the browser's own pages or files. */
export function isSaveableUrl(url: string | undefined): url is string {
  if (!url) return false;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:";
  } catch {
    return false;
  }
}
