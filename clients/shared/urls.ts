// URL validation and normalization: the rule of the server's libs/common/src/common/urls.py (docs/api-guide.md,
// section 7), run by the web app against the same vectors (clients/shared/vectors/urls.json). The normalized
// URL tells "already saved" before the server has answered; a URL refused here is one the server refuses.
//
// Scheme and host lowercased, international hosts in punycode, a leading "www." dropped (unless one label
// would be left), userinfo and the fragment dropped, default ports dropped, tracking parameters dropped
// (utm_*, the list below, and "si" on YouTube/Spotify hosts) with the other parameters kept in order and
// their exact encoding, an empty path made "/". Path and query are otherwise kept as written.
//
// Hosts the server hands to the idna package (non-ASCII, or ASCII that is not plain letters, digits and
// hyphens) go through the browser's own IDNA (UTS 46, the URL standard's host parser) here; the two agree on
// the vectors, and may differ on hosts the IDNA 2008 tables and the URL standard judge differently (decision 0146).
//
// This module imports nothing, so it builds and type-checks from either client's tree.

export const MAX_URL_LENGTH = 2048;

export const TRACKING_PARAMS: ReadonlySet<string> = new Set([
  "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "mc_cid", "mc_eid", "igshid", "yclid",
  "_hsenc", "_hsmi", "mkt_tok", "ref_src",
]);
// "si" is a share-tracking id only on these services; elsewhere it may be a real parameter.
const SI_HOSTS = ["youtube.com", "youtu.be", "spotify.com"];
const DEFAULT_PORTS: Record<string, number> = { http: 80, https: 443 };

// WHATWG "forbidden domain code points" that can survive the netloc's extraction.
const FORBIDDEN_HOST_CHARS = /[\x00-\x20\x7f#%/:<>?@[\\\]^|]/;
const CONTROL_CHARS = /[\x00-\x1f\x7f]/;
const EDGE_C0_OR_SPACE = /^[\x00-\x20]+|[\x00-\x20]+$/g;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
const PLAIN_LABEL = "(?!..--)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const PLAIN_HOST = new RegExp(`^${PLAIN_LABEL}(?:\\.${PLAIN_LABEL})*$`);
const IPV_FUTURE = /^v[a-fA-F0-9]+\..+$/s;

/** A URL the server cannot store or fetch; the message is fit to show to a user. */
export class InvalidUrl extends Error {
  override name = "InvalidUrl";
}

export interface NormalizedUrl {
  url: string;
  domain: string;
}

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

/** The normalized URL and its domain, exactly as the server computes them; throws InvalidUrl where the
 * server refuses the URL. */
export function normalizeUrl(text: string): NormalizedUrl {
  if (codePoints(text) > MAX_URL_LENGTH) throw new InvalidUrl(`A web address can have at most ${MAX_URL_LENGTH} characters.`);
  const cleaned = text.replace(/[\t\n\r]/g, "").replace(EDGE_C0_OR_SPACE, "");
  if (CONTROL_CHARS.test(cleaned)) throw new InvalidUrl("The web address contains control characters.");
  const parts = split(cleaned);
  const scheme = parts.scheme.toLowerCase();
  if (scheme !== "http" && scheme !== "https") throw new InvalidUrl("Enter a web address starting with http:// or https://.");
  const [host, parsedPort] = splitNetloc(parts.netloc);
  const port = parsedPort === DEFAULT_PORTS[scheme] ? null : parsedPort;
  const path = parts.path || "/";
  const query = stripTracking(parts.query, host);
  const authority = port === null ? host : `${host}:${port}`;
  return { url: `${scheme}://${authority}${path}${query ? `?${query}` : ""}`, domain: host };
}

/** The normalized URL, or null where the server would refuse it. */
export function normalizedUrlOrNull(text: string): string | null {
  try {
    return normalizeUrl(text).url;
  } catch (error) {
    if (error instanceof InvalidUrl) return null;
    throw error;
  }
}

interface Parts {
  scheme: string;
  netloc: string;
  path: string;
  query: string;
}

// Python's urllib.parse.urlsplit, including the checks with which it refuses a netloc.
function split(url: string): Parts {
  let scheme = "";
  let rest = url;
  const colon = url.indexOf(":");
  if (colon > 0 && SCHEME.test(url.slice(0, colon))) {
    scheme = url.slice(0, colon).toLowerCase();
    rest = url.slice(colon + 1);
  }
  let netloc = "";
  if (rest.startsWith("//")) {
    let end = rest.length;
    for (const c of "/?#") {
      const at = rest.indexOf(c, 2);
      if (at >= 0) end = Math.min(end, at);
    }
    netloc = rest.slice(2, end);
    rest = rest.slice(end);
    const open = netloc.includes("[");
    if (open !== netloc.includes("]")) throw new InvalidUrl("The web address has an unterminated IPv6 address.");
    if (open) {
      const bracketed = netloc.slice(netloc.indexOf("[") + 1).split("]")[0] ?? "";
      if (bracketed.startsWith("v") ? !IPV_FUTURE.test(bracketed) : ipv6(bracketed) === null) {
        throw new InvalidUrl("The web address has an invalid IPv6 address.");
      }
    }
  }
  const hash = rest.indexOf("#");
  if (hash >= 0) rest = rest.slice(0, hash);
  let query = "";
  const question = rest.indexOf("?");
  if (question >= 0) {
    query = rest.slice(question + 1);
    rest = rest.slice(0, question);
  }
  checkNetloc(netloc);
  return { scheme, netloc, path: rest, query };
}

// A netloc with characters like U+2100 (℀) that NFKC turns into "a/c" is refused, as urlsplit does.
function checkNetloc(netloc: string): void {
  if (!netloc || /^[\x00-\x7f]*$/.test(netloc)) return;
  const n = netloc.replace(/[@:#?]/g, "");
  const normalized = n.normalize("NFKC");
  if (n !== normalized && /[/?#@:]/.test(normalized)) throw new InvalidUrl("The web address has characters not allowed in a host name.");
}

function splitNetloc(netloc: string): [string, number | null] {
  const hostport = netloc.slice(netloc.lastIndexOf("@") + 1);
  let host: string;
  let rawPort: string;
  if (hostport.startsWith("[")) {
    const end = hostport.indexOf("]");
    if (end === -1) throw new InvalidUrl("The web address has an unterminated IPv6 address.");
    const literal = hostport.slice(1, end);
    const address = literal.includes("%") ? null : ipv6(literal);
    if (address === null) throw new InvalidUrl("The web address has an invalid IPv6 address.");
    host = address;
    const after = hostport.slice(end + 1);
    if (after && !after.startsWith(":")) throw new InvalidUrl("The web address has characters after the IPv6 address.");
    rawPort = after.slice(1);
  } else {
    const colon = hostport.indexOf(":");
    host = normalizeDomain(colon === -1 ? hostport : hostport.slice(0, colon));
    rawPort = colon === -1 ? "" : hostport.slice(colon + 1);
  }
  return [host, parsePort(rawPort)];
}

function parsePort(raw: string): number | null {
  if (raw === "") return null;
  if (!/^[0-9]+$/.test(raw) || Number(raw) > 65535) throw new InvalidUrl(`The web address has an invalid port “${raw}”.`);
  return Number(raw);
}

/** "[compressed]" form of an IPv6 literal, or null when it is not one. */
function ipv6(literal: string): string | null {
  if (!/^[0-9A-Fa-f:.]+$/.test(literal)) return null;
  try {
    const host = new URL(`http://[${literal}]/`).hostname;
    return host.startsWith("[") ? host : null;
  } catch {
    return null;
  }
}

function normalizeDomain(rawHost: string): string {
  let host = rawHost;
  if (host.includes("%")) {
    try {
      host = decodeURIComponent(host);
    } catch {
      throw new InvalidUrl("The web address has a host that is not valid percent-encoded UTF-8.");
    }
  }
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (!host) throw new InvalidUrl("The web address has no host.");
  if (FORBIDDEN_HOST_CHARS.test(host)) throw new InvalidUrl("The web address has characters not allowed in a host name.");
  host = toAscii(host);
  if (host.length > 253) throw new InvalidUrl("The web address has a host longer than 253 characters.");
  if (host.startsWith("www.") && host.slice(4).includes(".")) host = host.slice(4);
  return host;
}

function invalidDomain(): InvalidUrl {
  return new InvalidUrl("The web address's host is not a valid domain name.");
}

// The host's ASCII (A-label) form.
function toAscii(host: string): string {
  const lowered = host.toLowerCase();
  if (/^[\x00-\x7f]*$/.test(host)) {
    if (PLAIN_HOST.test(lowered)) return lowered;
    // ASCII that is not plain: the server keeps each label lowercased, 1-63 characters; a trailing dot
    // (the host ended in two) stays only when every label is plain.
    const labels = lowered.split(".");
    if (labels.length > 1 && labels.at(-1) === "" && PLAIN_HOST.test(labels.slice(0, -1).join("."))) return lowered;
    if (labels.some((label) => label.length === 0 || label.length > 63)) throw invalidDomain();
    return lowered;
  }
  // A label appended so that the URL standard never reads the host as an IPv4 number ("443" stays "443").
  let ascii: string | null = null;
  try {
    const parsed = new URL(`http://${strictLabels(host) ? host : transitional(host)}.a/`).hostname;
    if (parsed.endsWith(".a")) ascii = parsed.slice(0, -2);
  } catch {
    ascii = null;
  }
  if (ascii !== null) {
    // A trailing dot (the host ended in two, or in "。") stays where the idna package takes the name.
    const trailing = ascii.endsWith(".");
    if (trailing && !strictLabels(host)) throw invalidDomain();
    const labels = (trailing ? ascii.slice(0, -1) : ascii).split(".");
    if (labels.some((label) => label.length === 0 || label.length > 63 || FORBIDDEN_HOST_CHARS.test(label))) throw invalidDomain();
    return ascii;
  }
  // The server's fallback for names IDNA refuses: a host that maps to ASCII is kept, lowercased.
  const mapped = mapHost(host);
  if (!/^[\x00-\x7f]*$/.test(mapped) || FORBIDDEN_HOST_CHARS.test(mapped)) throw invalidDomain();
  if (mapped.split(".").some((label) => label.length === 0 || label.length > 63)) throw invalidDomain();
  return mapped;
}

// Close to UTS 46 mapping: compatibility forms, lower case, the ideographic dots, ignorable characters removed.
function mapHost(host: string): string {
  // Character by character: a whole-string lower case would turn a word-final Σ into ς.
  return Array.from(host.normalize("NFKC"), (ch) => ch.toLowerCase())
    .join("")
    .replace(/[\u3002\uff0e\uff61]/g, ".")
    .replace(/[\u00ad\u034f\u180b-\u180f\u200b\u2060\ufe00-\ufe0f\ufeff]/g, "");
}

// Close to what strict IDNA 2008 takes: labels of letters, marks, digits and inner hyphens.
function strictLabels(host: string): boolean {
  const labels = mapHost(host).replace(/\.$/, "").split(".");
  return labels.every(
    (label) => /^[\p{L}\p{M}\p{N}-]+$/u.test(label) && !/^-|-$/.test(label) && (label.slice(2, 4) !== "--" || label.startsWith("xn--")),
  );
}

// Where strict IDNA 2008 refuses the name, the server converts each label it refuses with IDNA 2003, which maps
// ß to ss and ς to σ.
function transitional(host: string): string {
  return mapHost(host)
    .split(".")
    .map((label) => (strictLabels(label) ? label : label.replace(/ß/g, "ss").replace(/ς/g, "σ")))
    .join(".");
}

// Python's urllib.parse.unquote: %XX runs decoded as UTF-8 (bad bytes become U+FFFD), anything else kept.
function unquote(text: string): string {
  if (!text.includes("%")) return text;
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    const bytes = new Uint8Array(run.length / 3);
    for (let i = 0; i < bytes.length; i += 1) bytes[i] = Number.parseInt(run.slice(i * 3 + 1, i * 3 + 3), 16);
    return new TextDecoder("utf-8").decode(bytes);
  });
}

function stripTracking(query: string, host: string): string {
  if (!query) return "";
  const dropSi = SI_HOSTS.some((suffix) => host === suffix || host.endsWith(`.${suffix}`));
  const kept: string[] = [];
  for (const segment of query.split("&")) {
    if (!segment) continue;
    const eq = segment.indexOf("=");
    const name = unquote((eq === -1 ? segment : segment.slice(0, eq)).replaceAll("+", " ")).toLowerCase();
    if (name.startsWith("utm_") || TRACKING_PARAMS.has(name) || (dropSi && name === "si")) continue;
    kept.push(segment);
  }
  return kept.join("&");
}
