import assert from "node:assert/strict";
import { test } from "node:test";
import { Window } from "happy-dom";

import { drawItems } from "../src/lib/highlights.ts";
import type { DrawItem } from "../src/lib/highlights.ts";
import { MARK_CLASS } from "../src/lib/marks.ts";
import { clearMarks, draw, handlePageRequest, selectionOf } from "../src/lib/page.ts";

function page(html: string): Document {
  const window = new Window({ url: "https://news.test/story" });
  window.document.body.innerHTML = html;
  return window.document as unknown as Document;
}

/** Selects from ``start`` to ``end`` (UTF-16 indices) of the first text node containing ``text``. */
function select(doc: Document, text: string, from: string, to: string): void {
  const walker = doc.createTreeWalker(doc.body, 4);
  let node: Text | null = null;
  while (walker.nextNode()) {
    if ((walker.currentNode as Text).data.includes(text)) {
      node = walker.currentNode as Text;
      break;
    }
  }
  assert.ok(node, text);
  const range = doc.createRange();
  range.setStart(node, node.data.indexOf(from));
  range.setEnd(node, node.data.indexOf(to) + to.length);
  const selection = doc.getSelection()!;
  selection.removeAllRanges();
  selection.addRange(range);
}

const item = (key: number, quote: string, prefix = "", suffix = "", color: DrawItem["color"] = "yellow"): DrawItem => ({ key, quote, prefix, suffix, color });

test("the selection's selector: the quote trimmed, at most 64 code points of page text on each side", () => {
  const long = "x".repeat(80);
  const doc = page(`<p>${long} Cats 🐈 sleep all day. ${long}</p>`);
  select(doc, "Cats", " Cats", "day. ");
  const reply = selectionOf(doc);
  assert.ok("selector" in reply);
  assert.equal(reply.selector.quote, "Cats 🐈 sleep all day.");
  assert.equal([...reply.selector.prefix].length, 64);
  assert.ok(reply.selector.prefix.endsWith("x "));
  assert.equal(reply.selector.suffix, ` ${"x".repeat(63)}`);
});

test("a selection across elements quotes their text in page order", () => {
  const doc = page("<p>The <b>bold</b> claim</p>");
  const range = doc.createRange();
  range.setStart(doc.querySelector("p")!.firstChild!, 1);
  range.setEnd(doc.querySelector("p")!.lastChild!, 3);
  doc.getSelection()!.addRange(range);
  const reply = selectionOf(doc);
  assert.ok("selector" in reply);
  assert.deepEqual(reply.selector, { quote: "he bold cl", prefix: "T", suffix: "aim" });
});

test("no selection, or only white space, is refused with a sentence", () => {
  const doc = page("<p>Some   text</p>");
  assert.deepEqual(selectionOf(doc), { problem: "Select some text on the page first." });
  select(doc, "Some", "   ", "   ");
  assert.deepEqual(selectionOf(doc), { problem: "Select some text on the page first." });
});

test("highlights are drawn as marks with a class only, in page order, and the missing ones are named", () => {
  const doc = page("<h1>Title</h1><p>One fish, <i>two fish</i>, red fish.</p><p>Blue fish.</p>");
  const reply = draw(doc, [item(0, "Blue fish"), item(1, "fish, two", "One ", " fish", "green"), item(2, "not on the page at all")]);
  assert.deepEqual(reply, { found: [1, 0], missing: [2] });
  const marks = Array.from(doc.querySelectorAll("mark"));
  assert.deepEqual(marks.map((m) => m.textContent), ["fish, ", "two", "Blue fish"]);
  for (const mark of marks) assert.deepEqual(mark.getAttributeNames(), ["class"]);
  assert.equal(marks[0]!.className, `${MARK_CLASS} ${MARK_CLASS}-green`);
  assert.equal(marks[2]!.className, `${MARK_CLASS} ${MARK_CLASS}-yellow`);
});

test("drawing again replaces the marks, and clearing gives the page's text nodes back", () => {
  const html = "<p>Alpha beta gamma.</p><p>Delta.</p>";
  const doc = page(html);
  draw(doc, [item(0, "beta")]);
  draw(doc, [item(0, "beta"), item(1, "Delta")]);
  assert.equal(doc.querySelectorAll("mark").length, 2);
  clearMarks(doc);
  assert.equal(doc.body.innerHTML, html);
  assert.equal(doc.querySelector("p")!.childNodes.length, 1);
});

test("a page whose text changed: an edited passage is found approximately, a removed one is missing", () => {
  const doc = page("<p>The quick brown fox jumps over the lazy dog near the riverbank.</p>");
  const reply = draw(doc, [
    item(0, "quick brown fox jumped over", "The ", " the lazy"),
    item(1, "a sentence that was taken out of the article", "", ""),
  ]);
  assert.deepEqual(reply, { found: [0], missing: [1] });
  assert.equal(doc.querySelector("mark")!.textContent, "quick brown fox jumps over");
});

test("the draw list carries selectors and colors only: no id, note or bookmark reaches the page", () => {
  const items = drawItems([
    { id: "h-secret", bookmarkId: "b-secret", quote: "q", prefix: "p", suffix: "s", start: 3, end: 4, color: "pink", note: "my private note", anchor: "exact", createdAt: "t", updatedAt: "t" },
  ]);
  assert.deepEqual(items, [{ key: 0, quote: "q", prefix: "p", suffix: "s", color: "pink" }]);
  assert.doesNotMatch(JSON.stringify(items), /secret|private/);
});

test("drawing adds nothing to the page but mark elements with a class: no attribute, id or global", () => {
  const window = new Window({ url: "https://news.test/story" });
  const doc = window.document as unknown as Document;
  doc.body.innerHTML = "<article><p>Read this and that.</p></article>";
  const before = new Set(Object.getOwnPropertyNames(window));
  handlePageRequest(doc, { type: "draw", items: [item(0, "this")] });
  const added = Array.from(doc.querySelectorAll("*")).filter((e) => e.tagName === "MARK");
  assert.equal(added.length, 1);
  for (const element of Array.from(doc.querySelectorAll("*"))) {
    const names = element.getAttributeNames();
    assert.deepEqual(names, element.tagName === "MARK" ? ["class"] : []);
  }
  assert.deepEqual(Object.getOwnPropertyNames(window).filter((name) => !before.has(name)), []);
});

test("the content script answers the extension's requests and nothing else", () => {
  const doc = page("<p>Text</p>");
  assert.equal(handlePageRequest(doc, { type: "ping" }), "pong");
  assert.equal(handlePageRequest(doc, { type: "steal" } as never), null);
  assert.equal(handlePageRequest(doc, null as never), null);
  assert.deepEqual(handlePageRequest(doc, { type: "draw", items: "nope" } as never), { found: [], missing: [] });
});
