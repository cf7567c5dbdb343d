/** Writes that could not reach the server, kept in storage.local and sent later in the order made: the
 * client core's write queue (clients/shared/queue.ts) on the storage area, under the queue's lock, which
 * every page and the worker share, so each call reads the stored queue afresh.
 *
 * A highlight's PUT is queued after its bookmark's, so the server always knows the bookmark first. The
 * queue is bounded (MAX_QUEUED_WRITES): when full it refuses a new write with QueueFull and never drops
 * one it holds. The extension folds no edits: every write is sent as made.
 */

import type { ApiClient, BookmarkWrite, HighlightWrite } from "./api.ts";
import { MAX_QUEUED_WRITES } from "./config.ts";
import { type FlushResult as CoreFlushResult, type QueueStorage, WriteQueue as CoreQueue } from "../../../../clients/shared/queue.ts";
import type { KeyValue, LockRunner } from "./kv.ts";

const KEY = "queue";
const LOCK = "bookmarks-queue";

export type QueuedWrite =
  | { kind: "put"; id: string; body: BookmarkWrite }
  | { kind: "delete"; id: string }
  | { kind: "highlight-put"; id: string; body: HighlightWrite }
  | { kind: "highlight-delete"; id: string };

/** A write with its place in line, as stored. */
type Stored = QueuedWrite & { seq: number };

/** What a flush did: writes sent, refused for good, still queued. */
export type FlushResult = Omit<CoreFlushResult, "stoppedBy">;

/** The popup's line about the writes waiting, which says when the queue is full. */
export function queuedLine(count: number): string {
  const waiting = `${count} ${count === 1 ? "save" : "saves"} waiting to be sent.`;
  return count >= MAX_QUEUED_WRITES ? `${waiting} That's the most kept offline: new changes need a connection.` : waiting;
}

/** The stored writes, each with its `seq` (writes stored without one take their place in the list). */
async function read(local: KeyValue): Promise<Stored[]> {
  const writes = (await local.get<(QueuedWrite & { seq?: number })[]>(KEY)) ?? [];
  return writes.map((write, i) => ({ ...write, seq: write.seq ?? i + 1 }) as Stored);
}

/** The queue in the storage area: one list under one key. The extension folds nothing, so the stored
 * write of a seq is always the one sent and forgetting goes by seq. */
function areaStorage(local: KeyValue): QueueStorage<Stored> {
  return {
    load: () => read(local),
    async append(writes) {
      const held = await read(local);
      let seq = held.reduce((last, write) => Math.max(last, write.seq), 0);
      const added = writes.map((write) => ({ ...write, seq: (seq += 1) }) as Stored);
      await local.set(KEY, [...held, ...added]);
      return added;
    },
    async replace(write) {
      await local.set(KEY, (await read(local)).map((held) => (held.seq === write.seq ? write : held)));
    },
    async forget(sent) {
      await local.set(KEY, (await read(local)).filter((held) => held.seq !== sent.seq));
    },
  };
}

function withoutSeq(stored: Stored): QueuedWrite {
  const { seq: _seq, ...write } = stored;
  return write as QueuedWrite;
}

export class WriteQueue {
  private readonly local: KeyValue;
  private readonly lock: LockRunner;
  private readonly core: CoreQueue<Stored>;

  constructor(local: KeyValue, lock: LockRunner) {
    this.local = local;
    this.lock = lock;
    this.core = new CoreQueue(areaStorage(local), { bound: MAX_QUEUED_WRITES });
  }

  /** Keeps `write` after the others; throws QueueFull, keeping nothing, when the queue is full. */
  async add(write: QueuedWrite): Promise<void> {
    await this.lock(LOCK, async () => {
      await this.core.load();
      await this.core.add([write]);
    });
  }

  async all(): Promise<QueuedWrite[]> {
    return (await read(this.local)).sort((a, b) => a.seq - b.seq).map(withoutSeq);
  }

  async clear(): Promise<void> {
    await this.local.remove(KEY);
  }

  /** Sends the writes in order, by the client core's policy: stops at the first that cannot reach the
   * server (or needs a sign-in) and keeps it and the rest; a write the server refuses with a 4xx is
   * dropped, since sending it unchanged would be refused again, and would block every write behind it. */
  flush(api: ApiClient): Promise<FlushResult> {
    return this.lock(LOCK, async () => {
      await this.core.load();
      const { sent, refused, left } = await this.core.flush((write) => send(api, write));
      return { sent, refused, left };
    });
  }
}

/** Sends one write; throws what the server or the network said. */
async function send(api: ApiClient, write: QueuedWrite): Promise<void> {
  switch (write.kind) {
    case "put":
      await api.putBookmark(write.id, write.body);
      return;
    case "delete":
      await api.deleteBookmark(write.id);
      return;
    case "highlight-put":
      await api.putHighlight(write.id, write.body);
      return;
    case "highlight-delete":
      await api.deleteHighlight(write.id);
      return;
  }
}
