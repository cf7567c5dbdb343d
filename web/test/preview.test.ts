import assert from "node:assert/strict";
import { test } from "node:test";
import { type Preview, platformImagePath, previewFill, storableText } from "../src/preview.ts";

const IMAGE = `/v1/previews/images/${"ab12".repeat(16)}.webp`;
const FAVICON = `/v1/previews/images/${"cd34".repeat(16)}.webp`;
const preview: Preview = {
  url: "https://a.test/post",
  normalizedUrl: "https://a.test/post",
  title: "Baking sourdough at home",
  description: "A slow loaf, step by step.",
  siteName: "A Test",
  language: "en",
  imageUrl: IMAGE,
  faviconUrl: FAVICON,
  canonicalUrl: null,
};
const empty = { title: null, description: null, thumbnailUrl: null };
const nothing: Preview = { ...preview, title: null, description: null, siteName: null, language: null, imageUrl: null, faviconUrl: null };

test("a preview fills the title, description and picture of a bookmark that has none", () => {
  assert.deepEqual(previewFill(empty, preview), {
    title: "Baking sourdough at home",
    description: "A slow loaf, step by step.",
    thumbnailUrl: IMAGE,
  });
});

test("a title the person set is never replaced; the other empty fields are still filled", () => {
  assert.deepEqual(previewFill({ ...empty, title: "My bread notes" }, preview), {
    description: "A slow loaf, step by step.",
    thumbnailUrl: IMAGE,
  });
  const all = { title: "Mine", description: "My words", thumbnailUrl: "https://cdn.example/pic.jpg" };
  assert.deepEqual(previewFill(all, preview), {});
});

test("blank counts as empty; a preview with nothing writes nothing", () => {
  assert.deepEqual(previewFill({ title: "  ", description: "", thumbnailUrl: "" }, preview).title, "Baking sourdough at home");
  assert.deepEqual(previewFill(empty, nothing), {});
  assert.deepEqual(previewFill(empty, { ...nothing, title: " \n ", description: "" }), {});
});

test("a picture that is not a platform path is not taken", () => {
  assert.deepEqual(previewFill(empty, { ...nothing, imageUrl: "https://tracker.example/pixel.png" }), {});
  assert.deepEqual(previewFill(empty, { ...nothing, imageUrl: "/v1/previews/images/../../me" }), {});
});

test("text is stored as the server accepts it: one line, no NUL or lone surrogate, at most the limit", () => {
  assert.equal(storableText("  Two\nlines\u0000here\t ", 100), "Two lines here");
  assert.equal(storableText("broken \ud800 pair", 100), "broken \ufffd pair");
  const emoji = "😀".repeat(5);
  assert.equal(storableText(emoji, 3), "😀😀😀"); // whole characters, never half a surrogate pair
  assert.equal(previewFill(empty, { ...nothing, title: "x".repeat(1500) }).title?.length, 1000);
  assert.equal(storableText(null, 10), null);
});

test("platform pictures are same-origin paths; anything else is not shown", () => {
  assert.equal(platformImagePath(IMAGE), IMAGE);
  // An absolute URL of a platform picture (from another host name of the platform) keeps its path only.
  assert.equal(platformImagePath(`https://bookmarks.example${IMAGE}`), IMAGE);
  assert.equal(platformImagePath(`http://127.0.0.1:8080${IMAGE}?v=1`), IMAGE);
  for (const other of [
    null,
    undefined,
    "",
    "https://cdn.example/pic.jpg",
    "http://127.0.0.1:9/images/loaf.png",
    `//evil.example/elsewhere.png`,
    "/v1/previews/images/short.webp",
    `/v1/previews/images/${"AB12".repeat(16)}.webp`,
    `${IMAGE}/../../../v1/me`,
    `data:image/png;base64,iVBORw0KGgo=`,
    `javascript:alert(1)`,
    "not a url",
  ]) {
    assert.equal(platformImagePath(other), null, String(other));
  }
});
