// URL normalization as the server does it (docs/api-guide.md, section 7), to tell "already saved" before the
// server has answered. The server's normalizedUrl wins once it arrives.

const TRACKING = new Set([
  "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "mc_cid", "mc_eid", "igshid", "yclid",
  "_hsenc", "_hsmi", "mkt_tok", "ref_src",
]);
const SI_HOSTS = /(^|\.)(youtube\.com|youtu\.be|spotify\.com)$/;
const DEFAULT_PORTS: Record<string, string> = { "http:": "80", "https:": "443" };

export function parseHttpUrl(text: string): URL | null {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return null;
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname) return null;
  return url;
}

/** A typed address without a scheme ("example.com/a") is taken as https. */
export function withScheme(text: string): string {
  const trimmed = text.trim();
  if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed)) return trimmed;
  return trimmed ? `https://${trimmed}` : trimmed;
}

export function normalizeUrl(text: string): string | null {
  const url = parseHttpUrl(text);
  if (!url) return null;
  let host = url.hostname.toLowerCase();
  if (host.startsWith("www.")) host = host.slice(4);
  const port = url.port && url.port !== DEFAULT_PORTS[url.protocol] ? `:${url.port}` : "";
  const kept: string[] = [];
  const query = url.search.startsWith("?") ? url.search.slice(1) : "";
  for (const part of query ? query.split("&") : []) {
    const name = decodeURIComponent(part.split("=")[0] ?? "").toLowerCase();
    if (name.startsWith("utm_") || TRACKING.has(name)) continue;
    if (name === "si" && SI_HOSTS.test(host)) continue;
    kept.push(part);
  }
  const path = url.pathname || "/";
  return `${url.protocol}//${host}${port}${path}${kept.length ? `?${kept.join("&")}` : ""}`;
}

export function provisionalDomain(text: string): string | null {
  const url = parseHttpUrl(text);
  if (!url) return null;
  const host = url.hostname.toLowerCase();
  return host.startsWith("www.") ? host.slice(4) : host;
}
