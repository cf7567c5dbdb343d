// Wire shapes of the API (docs/api-guide.md) and the local records built from them.

export interface Bookmark {
  clientBookmarkId: string;
  url: string;
  normalizedUrl?: string | null;
  domain?: string | null;
  title: string | null;
  description: string | null;
  thumbnailUrl: string | null;
  summary: string | null;
  saveWhy: string | null;
  tags: string[];
  enrichmentStatus: string;
  snapshotStatus: string;
  lastErrorCode: string | null;
  isFavorite: boolean;
  collectionIds: string[];
  userTags: string[];
  isArchived: boolean;
  notes: string | null;
  clientSavedAt: string | null;
  lastOpenedAt: string | null;
  createdAt: string;
  updatedAt: string;
  enrichedAt: string | null;
  ownerUid?: string | null;
}

/** A local bookmark: the server's copy or our view of it, with deletion kept as a flag. */
export interface LocalBookmark extends Bookmark {
  deleted?: boolean;
  deletedAt?: string | null;
}

export interface Collection {
  id: string;
  name: string;
  parentId: string | null;
  createdAt: string;
  updatedAt: string;
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

export const HIGHLIGHT_COLORS = ["yellow", "green", "blue", "pink", "purple"] as const;
export type HighlightColor = (typeof HIGHLIGHT_COLORS)[number];

/** A passage of a saved page that the person marked, with an optional note (its offsets: code points). */
export interface Highlight {
  id: string;
  bookmarkId: string;
  quote: string;
  prefix: string;
  suffix: string;
  start: number | null;
  end: number | null;
  color: HighlightColor;
  note: string;
  anchor: "exact" | "fuzzy" | "orphan" | null;
  createdAt: string;
  updatedAt: string;
}

export interface LocalHighlight extends Highlight {
  deleted?: boolean;
  deletedAt?: string | null;
}

/** A highlight PUT: ``bookmarkId`` and ``quote`` always; the context and offsets at creation only. */
export interface HighlightFields {
  bookmarkId: string;
  quote: string;
  prefix?: string;
  suffix?: string;
  start?: number;
  end?: number;
  color?: HighlightColor;
  note?: string;
}

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

export interface Session {
  accessToken: string;
  refreshToken: string;
  user: User;
}

export interface User {
  id: string;
  isAnonymous: boolean;
  displayName?: string | null;
  email?: string | null;
  isPro?: boolean;
}

export interface DeltaPage {
  cursor: string | null;
  nextCursor: string | null;
  upserts: Bookmark[];
  tombstones: { clientBookmarkId: string; deletedAt: string }[];
  collections: Collection[];
  collectionTombstones: { id: string; deletedAt: string }[];
  highlights?: Highlight[];
  highlightTombstones?: { id: string; deletedAt: string }[];
}

export interface SearchResult {
  bookmark: Bookmark;
  snippet: string | null;
}

export interface ImportRecord {
  id: string;
  status: "queued" | "running" | "completed" | "failed";
  format: string;
  total: number | null;
  processed: number;
  created: number;
  updated: number;
  unchanged: number;
  invalid: number;
  error: string | null;
}

export interface ImportItem {
  line: number;
  url: string;
  outcome: "created" | "updated" | "unchanged" | "invalid";
  reason: string | null;
  clientBookmarkId: string | null;
}

export const BOOKMARK_ID = /^[a-zA-Z0-9_-]{1,128}$/;
