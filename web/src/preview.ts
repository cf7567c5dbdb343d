// Link previews (GET /v1/previews): what a preview may write into a bookmark, and which thumbnails the
// app shows. Pure: no I/O, so web/test covers it.

import type { PreviewData } from "../../clients/shared/model.ts";
import type { Bookmark, BookmarkFields } from "./model.ts";

/** The preview of a page as the server read it; every field is null when the page has none. */
export type Preview = PreviewData;

/** Where the platform serves preview pictures: same origin, no auth, immutable. */
const PLATFORM_IMAGE = /^\/v1\/previews\/images\/[0-9a-f]{64}\.webp$/;
const TITLE_MAX = 1000;
const DESCRIPTION_MAX = 10_000;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * The same-origin path of a platform picture, or null for anything else (a third-party address from an
 * import or an older enrichment, a data: URL, garbage). An absolute URL whose path is a platform picture
 * gives its path only, so the browser asks this origin and nobody else.
 */
export function platformImagePath(value: string | null | undefined): string | null {
  if (!value) return null;
  const text = value.trim();
  if (text.startsWith("/") && !text.startsWith("//")) return PLATFORM_IMAGE.test(text) ? text : null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  return PLATFORM_IMAGE.test(url.pathname) ? url.pathname : null;
}

function isEmpty(value: string | null | undefined): boolean {
  return !value || !value.trim();
}

/** Text the server stores as is: one line, no NUL or lone surrogate, at most ``max`` characters. */
export function storableText(value: string | null | undefined, max: number): string | null {
  if (!value) return null;
  const clean = value
    .replace(LONE_SURROGATE, "\uFFFD")
    .replace(/[\u0000-\u001f\u007f]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (!clean) return null;
  const chars = Array.from(clean);
  return chars.length > max ? chars.slice(0, max).join("").trimEnd() : clean;
}

/**
 * The fields a preview fills in: only those still empty in ``current``, so a title the person typed (at
 * add time, or while the preview was on its way) is never replaced. The picture is taken only when it
 * is a platform path. An empty object means there is nothing to write.
 */
export function previewFill(current: Pick<Bookmark, "title" | "description" | "thumbnailUrl">, preview: Preview): BookmarkFields {
  const fields: BookmarkFields = {};
  const title = storableText(preview.title, TITLE_MAX);
  if (title && isEmpty(current.title)) fields.title = title;
  const description = storableText(preview.description, DESCRIPTION_MAX);
  if (description && isEmpty(current.description)) fields.description = description;
  const image = platformImagePath(preview.imageUrl);
  if (image && isEmpty(current.thumbnailUrl)) fields.thumbnailUrl = image;
  return fields;
}
