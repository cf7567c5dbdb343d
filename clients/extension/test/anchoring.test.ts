import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { anchor, anchorAll, codePointLength, selectorAt } from "../src/lib/anchoring.ts";
import { codePointOffset, sliceCodePoints, utf16Index } from "../../../clients/shared/anchoring.ts";

interface Vector {
  name: string;
  before: string;
  after: string;
  highlight: { quote: string; prefix: string; suffix: string; start: number | null; end: number | null };
  expected: { anchor: string; start: number | null; end: number | null };
}

const vectors = (JSON.parse(readFileSync(new URL("../../../clients/shared/vectors/anchoring.json", import.meta.url), "utf8")) as { vectors: Vector[] }).vectors;

for (const v of vectors) {
  test(`anchoring vector: ${v.name}`, () => {
    const found = anchor(v.after, v.highlight);
    assert.deepEqual({ anchor: found.kind, start: found.start, end: found.end }, v.expected);
    if (found.start !== null && found.end !== null && found.kind === "exact") {
      assert.equal(sliceCodePoints(v.after, found.start, found.end), v.highlight.quote);
    }
  });
}

test("every vector's highlight is where it says in the text it was made on", () => {
  for (const v of vectors) {
    if (v.highlight.start === null || v.highlight.end === null) continue;
    assert.equal(sliceCodePoints(v.before, v.highlight.start, v.highlight.end), v.highlight.quote, v.name);
  }
});

test("anchorAll answers each selector as anchor does", () => {
  const text = vectors[0]!.after;
  const selectors = vectors.filter((v) => v.after === text).map((v) => v.highlight);
  assert.deepEqual(anchorAll(text, selectors), selectors.map((s) => anchor(text, s)));
});

test("code points and UTF-16 indices convert both ways around astral characters", () => {
  const text = "a🐈b🐕c";
  assert.equal(codePointLength(text), 5);
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((n) => utf16Index(text, n)), [0, 1, 3, 4, 6, 7]);
  assert.deepEqual([0, 1, 3, 4, 6, 7].map((i) => codePointOffset(text, i)), [0, 1, 2, 3, 4, 5]);
  assert.equal(sliceCodePoints(text, 1, 4), "🐈b🐕");
});

test("a fuzzy match counts an astral character as one edit", () => {
  const text = "We walked 🐕 the dog along the river.";
  const found = anchor(text, { quote: "walked 🐈 the dog", prefix: "We ", suffix: " along" });
  assert.deepEqual(found, { kind: "fuzzy", start: 3, end: 19 });
});

test("a selection's selector: trimmed quote, 64 code points of context each side, offsets in code points", () => {
  const text = `${"x".repeat(70)}🐈 cats  sleep 🐕${"y".repeat(70)}`;
  const start = 70; // the cat
  const end = codePointLength(text) - 70;
  const s = selectorAt(text, start + 1, end - 1)!;
  assert.equal(s.quote, "cats  sleep");
  assert.equal(s.start, 72);
  assert.equal(s.end, 83);
  assert.equal(codePointLength(s.prefix), 64);
  assert.ok(s.prefix.endsWith("x🐈 "));
  assert.equal(s.suffix, ` 🐕${"y".repeat(62)}`);
  assert.equal(selectorAt(text, 71, 72), null);
});
