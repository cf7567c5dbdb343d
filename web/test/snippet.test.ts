import assert from "node:assert/strict";
import { test } from "node:test";
import { highlight, parseSnippet } from "../src/snippet.ts";

test("only <mark> is markup; everything else is decoded to plain text", () => {
  const segments = parseSnippet("a &lt;script&gt;alert(1)&lt;/script&gt; <mark>match</mark> &amp; <b>x</b> &#39;q&#39;");
  assert.deepEqual(segments, [
    { text: "a <script>alert(1)</script> ", mark: false },
    { text: "match", mark: true },
    { text: " & <b>x</b> 'q'", mark: false },
  ]);
});

test("an unterminated mark stays text-only and nothing else is recognised", () => {
  assert.deepEqual(parseSnippet("<mark>open <img src=x onerror=alert(1)>"), [{ text: "open <img src=x onerror=alert(1)>", mark: true }]);
  assert.deepEqual(parseSnippet("&#0; &#xFFFFFF; &bogus;"), [{ text: "&#0; &#xFFFFFF; &bogus;", mark: false }]);
});

test("local highlighting marks every occurrence of a word, any case, regex characters literal", () => {
  assert.deepEqual(highlight("Rust and rust (c++)", ["rust", "c++"]), [
    { text: "Rust", mark: true },
    { text: " and ", mark: false },
    { text: "rust", mark: true },
    { text: " (", mark: false },
    { text: "c++", mark: true },
    { text: ")", mark: false },
  ]);
});
