/** The page as the browser rendered it, bounded to what the server accepts. */

import { MAX_CAPTURE_HTML_BYTES } from "./config.ts";

export type Captured = { html: string } | { skipped: "too-large" | "unavailable" };

/** Runs in the page: its serialized DOM, or null when it is certainly over the limit (every UTF-16
 * code unit is at least one UTF-8 byte), so a huge page is not copied out of the tab at all. */
function readPage(maxUnits: number): string | null {
  const html = document.documentElement.outerHTML;
  return html.length > maxUnits ? null : html;
}

export function utf8Length(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}

/** The HTML to send: a lone surrogate (possible in a DOM string, not in UTF-8 text, so refused by the
 * server) becomes U+FFFD, and a page over the limit is not sent at all. */
export function bound(html: string | null): Captured {
  if (html === null) return { skipped: "too-large" };
  const text = html.toWellFormed();
  if (utf8Length(text) > MAX_CAPTURE_HTML_BYTES) return { skipped: "too-large" };
  return { html: text };
}

/** Reads the tab's DOM with scripting.executeScript (activeTab or the page's host permission). */
export async function captureTab(tabId: number): Promise<Captured> {
  let results: chrome.scripting.InjectionResult<string | null>[];
  try {
    results = await chrome.scripting.executeScript({
      target: { tabId },
      func: readPage,
      args: [MAX_CAPTURE_HTML_BYTES],
    });
  } catch {
    return { skipped: "unavailable" }; // no access to this tab (a browser page, a store page, a closed tab)
  }
  const result = results[0]?.result;
  if (result === undefined) return { skipped: "unavailable" };
  return bound(result);
}
