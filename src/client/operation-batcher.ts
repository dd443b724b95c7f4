import type { WireOperation, WireOutcome } from '../wire/index.js';

interface Waiting {
  operations: readonly WireOperation[];
  resolve: (outcomes: WireOutcome[]) => void;
  reject: (error: unknown) => void;
}

/**
 * Coalesces the operations that callers in one process submit within one turn of the event
 * loop into one request (several when they exceed `maxBatch`), so that many concurrent acks
 * or publishes cost one round trip and one storage transaction on the server.
 */
export class OperationBatcher {
  private waiting: Waiting[] = [];
  private scheduled = false;

  constructor(
    private readonly send: (operations: WireOperation[]) => Promise<WireOutcome[]>,
    private readonly maxBatch: number,
  ) {}

  submit(operations: readonly WireOperation[]): Promise<WireOutcome[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ operations, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.scheduled = false;
    const waiting = this.waiting;
    this.waiting = [];
    let request: Waiting[] = [];
    let size = 0;
    for (const entry of waiting) {
      if (size > 0 && size + entry.operations.length > this.maxBatch) {
        void this.sendRequest(request);
        request = [];
        size = 0;
      }
      request.push(entry);
      size += entry.operations.length;
    }
    if (request.length > 0) void this.sendRequest(request);
  }

  /** One request for the entries; a caller whose own list is over maxBatch is split. */
  private async sendRequest(entries: Waiting[]): Promise<void> {
    try {
      const all = entries.flatMap((entry) => entry.operations);
      const outcomes: WireOutcome[] = [];
      for (let start = 0; start < all.length; start += this.maxBatch) {
        outcomes.push(...(await this.send(all.slice(start, start + this.maxBatch))));
      }
      let at = 0;
      for (const entry of entries) {
        entry.resolve(outcomes.slice(at, at + entry.operations.length));
        at += entry.operations.length;
      }
    } catch (error) {
      for (const entry of entries) entry.reject(error);
    }
  }
}
