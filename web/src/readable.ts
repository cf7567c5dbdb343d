// The reader's page: the stored snapshot parsed (DOMParser runs nothing) and rebuilt from a short list
// of text elements, so no script, handler, style or form of the saved page survives. The result goes
// into a sandboxed frame without scripts as a second wall. Images stay only when they load nothing from
// elsewhere (data: pictures, or the platform's preview pictures, same origin): reading a saved page
// never contacts its site.

import { platformImagePath } from "./preview.ts";

const KEEP = new Set([
  "P", "H1", "H2", "H3", "H4", "H5", "H6", "UL", "OL", "LI", "BLOCKQUOTE", "PRE", "CODE", "EM", "STRONG",
  "B", "I", "A", "IMG", "FIGURE", "FIGCAPTION", "BR", "HR", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "SUP", "SUB",
]);
const DROP = new Set([
  "SCRIPT", "STYLE", "NOSCRIPT", "IFRAME", "OBJECT", "EMBED", "FORM", "SVG", "TEMPLATE", "NAV", "HEADER",
  "FOOTER", "ASIDE", "BUTTON", "INPUT", "SELECT", "TEXTAREA", "CANVAS", "VIDEO", "AUDIO", "LINK", "META",
]);

function safeUrl(value: string | null, base: string): string | null {
  if (!value) return null;
  try {
    const url = new URL(value, base);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

/** An image source that makes no request to another origin: a data: picture or a platform picture's path. */
function safeImage(value: string | null, base: string): string | null {
  if (!value) return null;
  const text = value.trim();
  if (/^data:image\//i.test(text)) return text;
  try {
    return platformImagePath(new URL(text, base).href);
  } catch {
    return null;
  }
}

function copy(source: Node, target: Element, doc: Document, base: string): void {
  for (const child of Array.from(source.childNodes)) {
    if (child.nodeType === Node.TEXT_NODE) {
      target.appendChild(doc.createTextNode(child.textContent ?? ""));
      continue;
    }
    if (!(child instanceof Element) || DROP.has(child.tagName.toUpperCase())) continue;
    const tag = child.tagName.toUpperCase();
    if (!KEEP.has(tag)) {
      copy(child, target, doc, base);
      continue;
    }
    const element = doc.createElement(tag.toLowerCase());
    if (tag === "A") {
      const href = safeUrl(child.getAttribute("href"), base);
      if (href) {
        element.setAttribute("href", href);
        element.setAttribute("target", "_blank");
        element.setAttribute("rel", "noopener noreferrer");
      }
    } else if (tag === "IMG") {
      const src = safeImage(child.getAttribute("src"), base);
      if (!src) continue;
      element.setAttribute("src", src);
      element.setAttribute("alt", child.getAttribute("alt") ?? "");
      element.setAttribute("loading", "lazy");
      element.setAttribute("referrerpolicy", "no-referrer");
    }
    copy(child, element, doc, base);
    target.appendChild(element);
  }
}

export interface ReaderSettings {
  size: "s" | "m" | "l" | "xl";
  width: "narrow" | "wide";
  theme: "light" | "sepia" | "dark";
}

/** A complete HTML document for the reader frame: the page's readable content only. */
export function readerDocument(html: string, pageUrl: string, title: string, css: string, settings: ReaderSettings): string {
  const source = new DOMParser().parseFromString(html, "text/html");
  const root = source.querySelector("article") ?? source.querySelector("main") ?? source.body;
  const doc = document.implementation.createHTMLDocument(title);
  doc.documentElement.setAttribute("lang", source.documentElement.getAttribute("lang") || "en");
  doc.documentElement.className = `size-${settings.size} width-${settings.width} theme-${settings.theme}`;
  const meta = doc.createElement("meta");
  meta.setAttribute("charset", "utf-8");
  doc.head.appendChild(meta);
  const link = doc.createElement("link");
  link.setAttribute("rel", "stylesheet");
  link.setAttribute("href", css);
  doc.head.appendChild(link);
  const article = doc.createElement("article");
  if (root?.querySelector("h1")?.textContent?.trim() !== title.trim()) {
    const heading = doc.createElement("h1");
    heading.textContent = title;
    article.appendChild(heading);
  }
  if (root) copy(root, article, doc, pageUrl);
  doc.body.appendChild(article);
  return `<!doctype html>${doc.documentElement.outerHTML}`;
}
