// One persistent write queue for the web app and the extension (decision 0149).
//
// Writes are kept in storage (each host brings its own: IndexedDB in the web app, a storage area in the
// extension) and sent in the order made (`seq`). The queue never drops a write silently: a bounded queue
// refuses a new write with QueueFull and keeps every write it holds; a write leaves only when the server
// answered it, or refused it for good (reported to the host). Writes are idempotent (PUT and DELETE by the
// client's own ids), so a write sent again after a crash between its answer and its forgetting is harmless.

import { type ApiError, outcomeOf } from "./errors.ts";

/** A queued write: its place in line, its kind and the id of the record it writes. */
export interface QueuedOp {
  seq: number;
  kind: string;
  id: string;
}

/** A write before storage gave it its place in line. */
export type Unsequenced<Op extends QueuedOp> = Op extends unknown ? Omit<Op, "seq"> : never;

/** The bounded queue is full: the new write is refused, and the person told, rather than an older one dropped. */
export class QueueFull extends Error {
  override name = "QueueFull";

  constructor() {
    super("Too many changes are waiting to be sent. Try again once you're back online.");
  }
}

/** The host's storage of the queue. */
export interface QueueStorage<Op extends QueuedOp> {
  /** Every stored write, in any order. */
  load(): Promise<Op[]>;
  /** Stores `ops` after the others in one step, each with the next `seq`; returns them as stored. */
  append(ops: Unsequenced<Op>[]): Promise<Op[]>;
  /** Stores `op` in place of the write of the same `seq`. */
  replace(op: Op): Promise<void>;
  /** Forgets `sent` when the stored write of its `seq` still equals it (one folded into meanwhile stays). */
  forget(sent: Op): Promise<void>;
}

/** The write `next` folded into the queued `tail`, or null when both stay. */
export type Fold<Op extends QueuedOp> = (tail: Op, next: Unsequenced<Op>) => Op | null;

/** The folding rule: a PUT (of a kind in `kinds`) folds into the last queued write when that is a PUT of
 * the same kind and record, its `fields` over the queued ones. A delete never folds and nothing folds into
 * one, so a delete after an unsent create keeps both, in order. */
export function foldEdits<Op extends QueuedOp & { fields?: object }>(kinds: readonly string[]): Fold<Op> {
  return (tail, next) => {
    if (!kinds.includes(tail.kind) || tail.kind !== next.kind || tail.id !== next.id) return null;
    const fields = (next as { fields?: object }).fields;
    return { ...tail, fields: { ...tail.fields, ...fields } };
  };
}

export interface QueueOptions<Op extends QueuedOp> {
  /** How a single new write folds into the last queued one; without it, every write is queued. */
  fold?: Fold<Op>;
  /** The most writes held; past it a new write is refused with QueueFull. */
  bound?: number;
}

/** What a flush did: writes sent, refused for good, still queued; `stoppedBy` the error that stopped it. */
export interface FlushResult {
  sent: number;
  refused: number;
  left: number;
  stoppedBy?: unknown;
}

export interface FlushHandlers<Op extends QueuedOp, Answer> {
  /** Stores what the server answered and forgets `op` in one step; without it, the queue forgets `op`. */
  accepted?: (op: Op, answer: Answer) => Promise<void>;
  /** Reports a write the server refused for good; the queue has forgotten it. */
  refused?: (op: Op, error: ApiError) => void | Promise<void>;
}

export class WriteQueue<Op extends QueuedOp> {
  /** The writes held, in order: the host's view of its storage. */
  ops: Op[] = [];
  /** The `seq` being sent right now: no later edit folds into it. */
  inFlight: number | null = null;

  private readonly storage: QueueStorage<Op>;
  private readonly options: QueueOptions<Op>;

  constructor(storage: QueueStorage<Op>, options: QueueOptions<Op> = {}) {
    this.storage = storage;
    this.options = options;
  }

  /** Reads the stored writes into memory, in order. */
  async load(): Promise<Op[]> {
    this.ops = (await this.storage.load()).sort((a, b) => a.seq - b.seq);
    return this.ops;
  }

  /** Keeps `ops` after the others (a single edit may fold into the last queued write). A full bounded
   * queue throws QueueFull and keeps nothing of `ops`. */
  async add(ops: Unsequenced<Op>[]): Promise<void> {
    const folded = this.folded(ops);
    if (folded) {
      // In memory before storage: a flush starting meanwhile sends the folded write (folded after, it would
      // send the older one and its forgetting would drop the folded one).
      this.ops[this.ops.length - 1] = folded;
      await this.storage.replace(folded);
      return;
    }
    const { bound } = this.options;
    if (bound !== undefined && this.ops.length + ops.length > bound) throw new QueueFull();
    const stored = await this.storage.append(ops);
    // A reload of the storage (another page's change) may have read these already.
    const known = new Set(this.ops.map((op) => op.seq));
    this.ops.push(...stored.filter((op) => !known.has(op.seq)));
  }

  private folded(ops: Unsequenced<Op>[]): Op | null {
    const tail = this.ops[this.ops.length - 1];
    const only = ops.length === 1 ? ops[0] : undefined;
    if (!this.options.fold || !only || !tail || tail.seq === this.inFlight) return null;
    return this.options.fold(tail, only);
  }

  /** Drops `seq` from memory (the host forgot it in storage). */
  forgotten(seq: number): void {
    this.ops = this.ops.filter((op) => op.seq !== seq);
  }

  /** Forgets every write in memory (the host cleared its storage). */
  reset(): void {
    this.ops = [];
  }

  /**
   * Sends the writes in order with `send`, which throws what the server or the network said. The client
   * core's policy (errors.ts) decides: an answer is forgotten as sent; a final refusal (4xx) is forgotten
   * and reported; anything else (offline, 408, 429, 5xx, a session to renew, an unknown error) stops the
   * flush and keeps that write and the rest. A failure of storage itself is thrown.
   */
  async flush<Answer>(send: (op: Op) => Promise<Answer>, handlers: FlushHandlers<Op, Answer> = {}): Promise<FlushResult> {
    const result: FlushResult = { sent: 0, refused: 0, left: 0 };
    for (let op = this.ops[0]; op !== undefined; op = this.ops[0]) {
      this.inFlight = op.seq;
      try {
        const stop = await this.sendOne(op, send, handlers, result);
        if (stop !== undefined) {
          result.stoppedBy = stop.error;
          break;
        }
      } finally {
        this.inFlight = null;
      }
    }
    result.left = this.ops.length;
    return result;
  }

  private async sendOne<Answer>(
    op: Op,
    send: (op: Op) => Promise<Answer>,
    handlers: FlushHandlers<Op, Answer>,
    result: FlushResult,
  ): Promise<{ error: unknown } | undefined> {
    let answer: Answer;
    try {
      answer = await send(op);
    } catch (error) {
      if (outcomeOf(error) !== "final") return { error };
      await this.storage.forget(op);
      this.forgotten(op.seq);
      result.refused += 1;
      await handlers.refused?.(op, error as ApiError);
      return undefined;
    }
    if (handlers.accepted) await handlers.accepted(op, answer);
    else await this.storage.forget(op);
    this.forgotten(op.seq);
    result.sent += 1;
    return undefined;
  }
}
