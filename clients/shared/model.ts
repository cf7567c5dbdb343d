// The API's wire shapes by name, for the web app and the extension. They come from wire.ts, which `make
// client-types` generates from docs/openapi.json (the server's own description); nothing here repeats a field.
// Where the document declares a plain string for a closed set (a highlight's color and anchor, an import's
// status), the alias narrows it, and a type check below says when the document disagrees.

import type { components } from "./wire.ts";

type Schemas = components["schemas"];

/** The highlight colors in the order the clients offer them; the schema's `Color` enum, checked below. */
export const HIGHLIGHT_COLORS = ["yellow", "green", "blue", "pink", "purple"] as const;
export type HighlightColor = (typeof HIGHLIGHT_COLORS)[number];
export type HighlightAnchor = "exact" | "fuzzy" | "orphan";

export type Bookmark = Schemas["Bookmark"];
/** A link's health as the server's checks found it (docs/api-guide.md, section 15). */
export type LinkStatus = NonNullable<Bookmark["linkStatus"]>;
export type BookmarkUpsert = Schemas["BookmarkUpsert"];
export type Tombstone = Schemas["Tombstone"];

export type Collection = Schemas["Collection"];
export type CollectionUpsert = Schemas["CollectionUpsert"];
export type CollectionTombstone = Schemas["CollectionTombstone"];

/** A passage of a saved page that the person marked, with an optional note (its offsets: code points). */
export type Highlight = Omit<Schemas["Highlight"], "color" | "anchor"> & {
  color: HighlightColor;
  anchor: HighlightAnchor | null;
};
export type HighlightUpsert = Schemas["HighlightUpsert"];
export type HighlightTombstone = Schemas["HighlightTombstone"];

/** One page of `GET /v1/bookmarks/delta`. */
export type DeltaPage = Omit<Schemas["DeltaData"], "highlights"> & { highlights: Highlight[] };

export type User = Schemas["UserOut"];
/** A sign-in's answer (anonymous, pairing claim, refresh). */
export type Session = Omit<Schemas["SessionOut"], "user"> & { user: User };

export type SearchResult = Schemas["SearchResult"];
export type ImportStatus = "queued" | "running" | "completed" | "failed";
export type ImportRecord = Omit<Schemas["ImportRecord"], "status"> & { status: ImportStatus };
export type CaptureRequest = Schemas["CaptureRequest"];
export type BulkRequest = Schemas["BulkRequest"];
export type BulkResult = Schemas["BulkResult"];
export type UndoResult = Schemas["UndoResult"];
export type DuplicateGroup = Schemas["DuplicateGroup"];
export type DuplicatesPage = Schemas["DuplicatesData"];
export type MergeRequest = Schemas["MergeRequest"];
export type TrashItem = Schemas["TrashItem"];
export type TrashPage = Schemas["TrashPageData"];
export type QuotaData = Schemas["QuotaData"];
export type PreviewData = Schemas["PreviewData"];
/** Every error answer's body (docs/api-guide.md, section 1). */
export type ErrorBody = Schemas["Error"];

// Compile-time checks against the generated document: `tsc` fails on a line below when it disagrees.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
export type WireChecks = [
  Holds<Same<HighlightColor, Schemas["Color"]>>,
  Holds<HighlightColor extends Schemas["Highlight"]["color"] ? true : false>,
  Holds<HighlightAnchor extends NonNullable<Schemas["Highlight"]["anchor"]> ? true : false>,
  Holds<ImportStatus extends Schemas["ImportRecord"]["status"] ? true : false>,
];
