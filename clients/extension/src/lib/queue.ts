/** Writes that could not reach the server, kept in storage.local and sent later in the order made.
 *
 * A highlight's PUT is queued after its bookmark's, so the server always knows the bookmark first.
 * Every write is idempotent (PUT and DELETE by the client's own bookmark or highlight id), so a write sent twice,
 * e.g. when the worker stops between the answer and the removal from the queue, is harmless. The queue is
 * bounded (MAX_QUEUED_WRITES): when full it refuses a new write with QueueFull and never drops one it holds.
 */

import type { ApiClient, BookmarkWrite, HighlightWrite } from "./api.ts";
import { MAX_QUEUED_WRITES } from "./config.ts";
import { outcomeOf } from "../../../../clients/shared/errors.ts";
import { QueueFull } from "./errors.ts";
import type { KeyValue, LockRunner } from "./kv.ts";

const KEY = "queue";
const LOCK = "bookmarks-queue";

export type QueuedWrite =
  | { kind: "put"; id: string; body: BookmarkWrite }
  | { kind: "delete"; id: string }
  | { kind: "highlight-put"; id: string; body: HighlightWrite }
  | { kind: "highlight-delete"; id: string };

export interface FlushResult {
  sent: number;
  refused: number;
  left: number;
}

/** The popup's line about the writes waiting, which says when the queue is full. */
export function queuedLine(count: number): string {
  const waiting = `${count} ${count === 1 ? "save" : "saves"} waiting to be sent.`;
  return count >= MAX_QUEUED_WRITES ? `${waiting} That's the most kept offline: new changes need a connection.` : waiting;
}

export class WriteQueue {
  private readonly local: KeyValue;
  private readonly lock: LockRunner;

  constructor(local: KeyValue, lock: LockRunner) {
    this.local = local;
    this.lock = lock;
  }

  /** Keeps `write` after the others; throws QueueFull, keeping nothing, when the queue is full. */
  async add(write: QueuedWrite): Promise<void> {
    await this.lock(LOCK, async () => {
      const writes = await this.all();
      if (writes.length >= MAX_QUEUED_WRITES) throw new QueueFull();
      await this.local.set(KEY, [...writes, write]);
    });
  }

  async all(): Promise<QueuedWrite[]> {
    return (await this.local.get<QueuedWrite[]>(KEY)) ?? [];
  }

  async clear(): Promise<void> {
    await this.local.remove(KEY);
  }

  /** Sends the writes in order. Stops at the first that cannot reach the server (or needs a sign-in)
   * and keeps it and the rest; a write the server refuses with a 4xx is dropped, since sending it
   * unchanged would be refused again, and would block every write behind it. */
  flush(api: ApiClient): Promise<FlushResult> {
    return this.lock(LOCK, async () => {
      const result: FlushResult = { sent: 0, refused: 0, left: 0 };
      const writes = await this.all();
      while (writes.length > 0) {
        const outcome = await send(api, writes[0]!);
        if (outcome === "wait") break;
        result[outcome === "sent" ? "sent" : "refused"] += 1;
        writes.shift();
        await this.local.set(KEY, writes);
      }
      result.left = writes.length;
      return result;
    });
  }
}

async function send(api: ApiClient, write: QueuedWrite): Promise<"sent" | "refused" | "wait"> {
  try {
    switch (write.kind) {
      case "put":
        await api.putBookmark(write.id, write.body);
        break;
      case "delete":
        await api.deleteBookmark(write.id);
        break;
      case "highlight-put":
        await api.putHighlight(write.id, write.body);
        break;
      case "highlight-delete":
        await api.deleteHighlight(write.id);
        break;
    }
    return "sent";
  } catch (error) {
    // The client core's policy: offline, 408, 429 and 5xx pass later; a session to renew (a 401, not
    // signed in) keeps the write for after the sign-in; any other refusal would come again.
    return outcomeOf(error) === "final" ? "refused" : "wait";
  }
}
