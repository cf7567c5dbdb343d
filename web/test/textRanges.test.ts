import assert from "node:assert/strict";
import { test } from "node:test";
import { Window } from "happy-dom";
import { TextMap, unwrapAll, wrapText } from "../src/anchoring.ts";

function page(html: string): { doc: Document; root: HTMLElement } {
  const window = new Window();
  const doc = window.document as unknown as Document;
  doc.body.innerHTML = `<article>${html}</article>`;
  return { doc, root: doc.querySelector("article") as HTMLElement };
}

test("the map's text is the root's textContent, offsets in code points", () => {
  const { root } = page("<h1>Cats 🐈</h1><p>sleep <em>all</em> day</p>");
  const map = new TextMap(root);
  assert.equal(map.text, root.textContent);
  assert.equal(map.length, 19);
});

test("a code point span becomes a Range across elements, and the Range gives the span back", () => {
  const { root } = page("<h1>Cats 🐈</h1><p>sleep <em>all</em> day</p>");
  const map = new TextMap(root);
  const range = map.range(5, 15)!; // "🐈sleep all"
  assert.equal(range.toString(), "🐈sleep all");
  assert.deepEqual(map.offsetsOf(range), [5, 15]);
  assert.equal(map.range(3, 3), null);
});

test("positions given by elements and child indices count the text before them", () => {
  const { root } = page("<p>one</p><p>two <b>three</b></p>");
  const map = new TextMap(root);
  const second = root.children[1]!;
  assert.equal(map.offsetOf(second, 0), 3);
  assert.equal(map.offsetOf(second, 1), 7);
  assert.equal(map.offsetOf(second, 2), 12);
  assert.equal(map.offsetOf(root, 2), 12);
  assert.equal(map.offsetOf(root.ownerDocument.body, 0), null);
});

test("a range reaching outside the root is clipped to it", () => {
  const { doc, root } = page("<p>inside text</p>");
  const range = doc.createRange();
  range.setStart(doc.body, 0);
  range.setEnd(root.querySelector("p")!.firstChild!, 6);
  assert.deepEqual(new TextMap(root).offsetsOf(range), [0, 6]);
});

test("marks wrap each text node's part, keep the text, and leave no trace when removed", () => {
  const { doc, root } = page("<p>Cats 🐈 sleep <em>all</em> day long</p>");
  const before = root.innerHTML;
  const marks = wrapText(new TextMap(root), 5, 16, () => {
    const mark = doc.createElement("mark");
    mark.className = "hl";
    return mark;
  });
  assert.deepEqual(marks.map((m) => m.textContent), ["🐈 sleep ", "all"]);
  assert.equal(root.textContent, "Cats 🐈 sleep all day long");
  assert.equal(root.querySelectorAll("mark").length, 2);
  unwrapAll(root, "mark.hl");
  assert.equal(root.innerHTML, before);
  assert.equal(root.querySelector("p")!.childNodes.length, 3);
});
