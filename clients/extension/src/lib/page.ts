/** The content script's work in the page: the selector of the selection, and the highlights drawn as
 * `mark` elements. It runs in the extension's isolated world: the page shares its DOM, never its
 * variables. What it puts in the DOM is a `mark` with a class and nothing else (no id, no data
 * attribute, no title): the page can see which passages are marked, as a person looking at it can, but
 * none of the library's ids, notes or other pages. */

import type { HighlightColor } from "./api.ts";
import { MAX_QUOTE, TextMap, anchorAll, codePointLength, selectorAt, wrapText } from "./anchoring.ts";
import { COLORS, type DrawItem } from "./highlights.ts";
import { type DrawReply, MARK_CLASS, type PageRequest, type SelectionReply } from "./marks.ts";

export function handlePageRequest(doc: Document, request: PageRequest): "pong" | SelectionReply | DrawReply | null {
  switch (request?.type) {
    case "ping":
      return "pong";
    case "selection":
      return selectionOf(doc);
    case "draw":
      return draw(doc, Array.isArray(request.items) ? request.items : []);
    default:
      return null;
  }
}

/** The selector of the page's selection, in the text of its body (code points, 64 of context a side). */
export function selectionOf(doc: Document): SelectionReply {
  const selection = doc.getSelection();
  const body = doc.body;
  if (!selection || selection.rangeCount === 0 || selection.isCollapsed || !body) return { problem: "Select some text on the page first." };
  const map = new TextMap(body);
  const offsets = map.offsetsOf(selection.getRangeAt(0));
  const selector = offsets ? selectorAt(map.text, offsets[0], offsets[1]) : null;
  if (!selector) return { problem: "Select some text on the page first." };
  if (codePointLength(selector.quote) > MAX_QUOTE) return { problem: `A highlight can have at most ${MAX_QUOTE} characters.` };
  return { selector: { quote: selector.quote, prefix: selector.prefix, suffix: selector.suffix } };
}

/** Removes the marks drawn before, then anchors each item in the body's text (the shared rule: exact,
 * then fuzzy, the context deciding) and wraps what it finds. */
export function draw(doc: Document, items: readonly DrawItem[]): DrawReply {
  const body = doc.body;
  clearMarks(doc);
  if (!body) return { found: [], missing: items.map((i) => i.key) };
  const text = new TextMap(body).text;
  const anchors = anchorAll(text, items.map((i) => ({ quote: String(i.quote), prefix: String(i.prefix ?? ""), suffix: String(i.suffix ?? "") })));
  const placed: { key: number; start: number }[] = [];
  const missing: number[] = [];
  items.forEach((item, index) => {
    const found = anchors[index];
    if (!found || found.start === null || found.end === null) {
      missing.push(item.key);
      return;
    }
    const { start, end } = found;
    // Marks add no text, so the offsets stay right; the text nodes split, so the map is made again.
    const marks = wrapText(new TextMap(body), start, end, () => mark(doc, item.color));
    if (marks.length === 0) missing.push(item.key);
    else placed.push({ key: item.key, start });
  });
  placed.sort((a, b) => a.start - b.start || a.key - b.key);
  return { found: placed.map((p) => p.key), missing };
}

function mark(doc: Document, color: HighlightColor): HTMLElement {
  const element = doc.createElement("mark");
  element.className = `${MARK_CLASS} ${MARK_CLASS}-${COLORS.includes(color) ? color : "yellow"}`;
  return element;
}

/** Takes the marks out, their text back in place; only the parents they were in are normalized. */
export function clearMarks(doc: Document): void {
  const parents = new Set<Node>();
  for (const element of Array.from(doc.querySelectorAll(`mark.${MARK_CLASS}`))) {
    const parent = element.parentNode;
    if (!parent) continue;
    while (element.firstChild) parent.insertBefore(element.firstChild, element);
    parent.removeChild(element);
    parents.add(parent);
  }
  for (const parent of parents) if (parent.isConnected) parent.normalize();
}
