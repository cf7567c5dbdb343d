// The local records the web app keeps, built on the API's wire shapes (clients/shared/model.ts, generated from
// docs/openapi.json by `make client-types`).

import type { Bookmark as WireBookmark, Collection, Highlight, HighlightUpsert } from "../../clients/shared/model.ts";

export { HIGHLIGHT_COLORS } from "../../clients/shared/model.ts";
export type {
  Collection,
  DeltaPage,
  Highlight,
  HighlightColor,
  ImportRecord,
  LinkStatus,
  SearchResult,
  Session,
  User,
} from "../../clients/shared/model.ts";

/** Fields the server writes after a save: absent from a bookmark made here until the server's answer, and
 * from records kept before the field existed. */
type ServerWritten = "ownerUid" | "normalizedUrl" | "domain" | "canonicalUrl" | "linkStatus" | "linkCheckedAt" | "linkMovedTo";

/** A bookmark as the app holds it: the server's copy, or one made here that the server has not answered yet. */
export type Bookmark = Omit<WireBookmark, ServerWritten> & { [K in ServerWritten]?: WireBookmark[K] | null };

/** A local bookmark: the server's copy or our view of it, with deletion kept as a flag. */
export interface LocalBookmark extends Bookmark {
  deleted?: boolean;
  deletedAt?: string | null;
}

export interface LocalCollection extends Collection {
  deleted?: boolean;
  deletedAt?: string | null;
}

export type BookmarkFields = Partial<
  Pick<
    Bookmark,
    | "url"
    | "title"
    | "description"
    | "thumbnailUrl"
    | "notes"
    | "isFavorite"
    | "collectionIds"
    | "userTags"
    | "isArchived"
    | "clientSavedAt"
    | "lastOpenedAt"
  >
>;

export type CollectionFields = Partial<Pick<Collection, "name" | "parentId">>;

export interface LocalHighlight extends Highlight {
  deleted?: boolean;
  deletedAt?: string | null;
}

/** A highlight with nothing known but its id (and bookmark and quote when given), as of ``at``. */
export function blankHighlight(id: string, at: string, bookmarkId = "", quote = ""): LocalHighlight {
  return {
    id, bookmarkId, quote, prefix: "", suffix: "", start: null, end: null, color: "yellow", note: "", anchor: null,
    createdAt: at, updatedAt: at,
  };
}

/** A highlight PUT, the wire's without its nulls: ``bookmarkId`` and ``quote`` always; the context and
 * offsets at creation only. */
export type HighlightFields = { [K in keyof HighlightUpsert]: Exclude<HighlightUpsert[K], null> };

export type Op =
  | { seq: number; kind: "put"; id: string; fields: BookmarkFields; createdAt: string }
  | { seq: number; kind: "delete"; id: string; createdAt: string }
  | { seq: number; kind: "collection-put"; id: string; fields: CollectionFields; createdAt: string }
  | { seq: number; kind: "collection-delete"; id: string; createdAt: string }
  | { seq: number; kind: "highlight-put"; id: string; fields: HighlightFields; createdAt: string }
  | { seq: number; kind: "highlight-delete"; id: string; createdAt: string };

export type RecordFamily = "bookmark" | "collection" | "highlight";

/** Which store an operation writes to. */
export function familyOf(op: Pick<Op, "kind">): RecordFamily {
  if (op.kind.startsWith("collection")) return "collection";
  if (op.kind.startsWith("highlight")) return "highlight";
  return "bookmark";
}

export type NewOp = Op extends infer T ? (T extends Op ? Omit<T, "seq"> : never) : never;

export interface ImportItem {
  line: number;
  url: string;
  outcome: "created" | "updated" | "unchanged" | "invalid";
  reason: string | null;
  clientBookmarkId: string | null;
}

export const BOOKMARK_ID = /^[a-zA-Z0-9_-]{1,128}$/;
