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

  /**
   * Runs `operations` in the next batch of their queue. An ack of more receipts, or a reserve
   * of more jobs, than the server takes in one entry (`maxBatch`) travels as several entries
   * of the same batch, which run one after the other in one storage unit: the same effect,
   * answered as the one operation it was.
   */
  async submit(queue: string, operations: readonly WireOperation[]): Promise<WireOutcome[]> {
    const maxBatch = this.maxBatch();
    if (!operations.some((operation) => entriesOf(operation) > maxBatch)) {
      return this.enqueue(queue, operations);
    }
    const parts = operations.map((operation) => splitEntries(operation, maxBatch));
    const outcomes = await this.enqueue(queue, parts.flat());
    let at = 0;
    return parts.map((part) => {
      const answers = outcomes.slice(at, at + part.length);
      at += part.length;
      return part.length === 1 ? (answers[0] as WireOutcome) : joinOutcomes(answers);
    });
  }

  private enqueue(queue: string, operations: readonly WireOperation[]): Promise<WireOutcome[]> {
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

/** How many entries the server counts in an operation against its maxBatch: receipts, jobs asked for. */
function entriesOf(operation: WireOperation): number {
  if (operation.type === 'ack' && Array.isArray(operation.receipts))
    return operation.receipts.length;
  if (operation.type === 'reserve' && typeof operation.max === 'number') return operation.max;
  return 1;
}

/**
 * An ack or a reserve as consecutive operations of at most `maxBatch` entries each. A reserve
 * takes at most one batch of such parts (maxBatch² jobs): "at most max" still holds, and a
 * huge max does not become millions of operations.
 */
function splitEntries(operation: WireOperation, maxBatch: number): WireOperation[] {
  let entries = entriesOf(operation);
  if (entries <= maxBatch) return [operation];
  if (operation.type === 'reserve') entries = Math.min(entries, maxBatch * maxBatch);
  const parts: WireOperation[] = [];
  for (let start = 0; start < entries; start += maxBatch) {
    parts.push(
      operation.type === 'ack'
        ? {
            ...operation,
            receipts: (operation.receipts as unknown[]).slice(start, start + maxBatch),
          }
        : { ...operation, max: Math.min(maxBatch, entries - start) },
    );
  }
  return parts;
}

/** The answers of a split operation as its one answer: the values in order, or the first refusal. */
function joinOutcomes(answers: readonly WireOutcome[]): WireOutcome {
  const refused = answers.find((answer) => !answer.ok);
  if (refused !== undefined) return refused;
  return {
    ok: true,
    value: answers.flatMap((answer) => (answer.ok ? (answer.value as unknown[]) : [])),
  };
}
