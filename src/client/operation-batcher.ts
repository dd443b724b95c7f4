import type { WireOperation, WireOutcome } from '../wire/index.js';

interface Waiting {
  operations: readonly WireOperation[];
  resolve: (outcomes: WireOutcome[]) => void;
  reject: (error: unknown) => void;
}

/** Sends one batch of one queue's operations (a request, a frame) and answers in order. */
export type BatchSender = (queue: string, operations: WireOperation[]) => Promise<WireOutcome[]>;

/**
 * Coalesces the operations that callers in one process submit within one turn of the event
 * loop into one batch per queue (several when they exceed `maxBatch`), so that many concurrent
 * acks or publishes cost one round trip and one storage transaction on the server. The
 * transport decides what a batch is: an HTTP request or a stream frame.
 */
export class OperationBatcher {
  private waiting = new Map<string, Waiting[]>();
  private scheduled = false;

  constructor(
    private readonly send: BatchSender,
    private readonly maxBatch: () => number,
  ) {}

  submit(queue: string, operations: readonly WireOperation[]): Promise<WireOutcome[]> {
    return new Promise((resolve, reject) => {
      let list = this.waiting.get(queue);
      if (list === undefined) {
        list = [];
        this.waiting.set(queue, list);
      }
      list.push({ operations, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.waiting;
    this.waiting = new Map();
    const maxBatch = this.maxBatch();
    for (const [queue, waiting] of all) {
      let batch: Waiting[] = [];
      let size = 0;
      for (const entry of waiting) {
        if (size > 0 && size + entry.operations.length > maxBatch) {
          void this.sendBatch(queue, batch, maxBatch);
          batch = [];
          size = 0;
        }
        batch.push(entry);
        size += entry.operations.length;
      }
      if (batch.length > 0) void this.sendBatch(queue, batch, maxBatch);
    }
  }

  /** One batch for the entries; a caller whose own list is over maxBatch is split. */
  private async sendBatch(queue: string, entries: Waiting[], maxBatch: number): Promise<void> {
    try {
      const all =
        entries.length === 1
          ? (entries[0]?.operations ?? [])
          : entries.flatMap((entry) => entry.operations);
      let outcomes: WireOutcome[];
      if (all.length <= maxBatch) {
        outcomes = await this.send(queue, all as WireOperation[]);
      } else {
        outcomes = [];
        // One part after the other, so that they run in the order the caller gave.
        for (let start = 0; start < all.length; start += maxBatch) {
          outcomes.push(...(await this.send(queue, all.slice(start, start + maxBatch))));
        }
      }
      let at = 0;
      for (const entry of entries) {
        entry.resolve(
          entries.length === 1 ? outcomes : outcomes.slice(at, at + entry.operations.length),
        );
        at += entry.operations.length;
      }
    } catch (error) {
      for (const entry of entries) entry.reject(error);
    }
  }
}
