/** Requests the popup and the options page send to the background, and their answers. */

import type { SaveOutcome, SaveRequest } from "./actions.ts";
import type { Bookmark } from "./api.ts";
import type { CollectionChoice } from "./collections.ts";

export type Request =
  | { type: "state"; url: string }
  | { type: "save"; request: SaveRequest }
  | { type: "update"; id: string; request: SaveRequest }
  | { type: "delete"; id: string; url: string; tabId?: number }
  | { type: "collections" }
  | { type: "account-changed" }
  | { type: "flush" }
  | { type: "highlights"; url: string; tabId?: number };

export interface PageState {
  signedIn: boolean;
  bookmark: Bookmark | null;
  collections: CollectionChoice[];
  queued: number;
}

export type Reply<T> = { ok: true; value: T } | { ok: false; error: string };

export async function ask<T>(request: Request): Promise<T> {
  const reply = (await chrome.runtime.sendMessage(request)) as Reply<T> | undefined;
  if (!reply) throw new Error("The extension's background did not answer. Try again.");
  if (!reply.ok) throw new Error(reply.error);
  return reply.value;
}

export type { SaveOutcome };
