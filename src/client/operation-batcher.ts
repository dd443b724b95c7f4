import { build, type PublishInput, ValidationError } from '../core/index.js';
import type { WireOperation, WireOutcome } from '../wire/index.js';
import { RemoteError } from './errors.js';

interface Waiting {
  operations: readonly WireOperation[];
  /** The bytes of each operation's JSON, its separator included (0 when bytes are not limited). */
  sizes: readonly number[];
  bytes: number;
  resolve: (outcomes: WireOutcome[]) => void;
  reject: (error: unknown) => void;
}

/** Sends one batch of one queue's operations (a request, a frame) and answers in order. */
export type BatchSender = (queue: string, operations: WireOperation[]) => Promise<WireOutcome[]>;

/** What the server takes in one batch. */
export interface BatchLimits {
  /** Most entries in one batch. */
  maxBatch: number;
  /** Most bytes of one batch's request body or frame, its envelope included. */
  maxBytes: number;
  /** `maxBatch` is the client's own option (`open`'s `maxBatch`), not the server's. */
  maxBatchIsOption?: boolean;
}

export interface BatcherSettings {
  send: BatchSender;
  /** The server's limits; a promise while they are not known yet (nothing is sent before). */
  limits(): BatchLimits | Promise<BatchLimits>;
  /** The bytes a batch of `queue` takes besides its operations (the frame's or body's envelope). */
  envelopeBytes(queue: string): number;
}

/** How a remote client's operations travel (RemoteOptions.transport). */
type Transport = 'stream' | 'http';

/**
 * The bytes around the operations of one batch of `queue`, by transport: an HTTP batch
 * request's body `{"operations":[…]}`, or a stream batch frame with the longest id.
 */
export const BATCH_ENVELOPE_BYTES: Readonly<Record<Transport, (queue: string) => number>> = {
  http: () => Buffer.byteLength(JSON.stringify({ operations: [] }), 'utf8'),
  stream: (queue) =>
    Buffer.byteLength(
      JSON.stringify({ type: 'batch', queue, operations: [], id: Number.MAX_SAFE_INTEGER }),
      'utf8',
    ),
};

/** The bytes an operation takes in a batch as it travels: its JSON and the comma after it. */
function operationBytes(operation: object): number {
  return Buffer.byteLength(JSON.stringify(operation), 'utf8') + 1;
}

/** A job with nothing given, as `build` fills it in: what each field is when absent. */
const ABSENT_JOB_FIELDS = build.publishBatch([{}]).jobs[0];

/**
 * The bytes `job` takes in a publish as this client sends it: its JSON, with the fields `build`
 * fills in when absent (delay and priority). Exact for a valid job (another is refused anyway).
 */
export function publishJobBytes(job: PublishInput): number {
  return Buffer.byteLength(JSON.stringify({ ...ABSENT_JOB_FIELDS, ...job }), 'utf8');
}

/**
 * The bytes of jobs one publish of `queue` holds over `transport`, the server taking `maxBytes`
 * in one batch (its maxBodyBytes): the jobs' publishJobBytes, with a comma between two, add up to
 * at most this, or the publish is refused unsent (PAYLOAD_TOO_LARGE), as `measure` finds.
 */
export function publishRoom(transport: Transport, queue: string, maxBytes: number): number {
  return maxBytes - BATCH_ENVELOPE_BYTES[transport](queue) - operationBytes(build.publishBatch([]));
}

/**
 * Coalesces the operations that callers in one process submit within one turn of the event
 * loop into one batch per queue (several when they exceed `maxBatch` or `maxBytes`), so that
 * many concurrent acks or publishes cost one round trip and one storage transaction on the
 * server. The transport decides what a batch is: an HTTP request or a stream frame.
 */
export class OperationBatcher {
  private waiting = new Map<string, Waiting[]>();
  private scheduled = false;
  private limits: BatchLimits | undefined;

  constructor(private readonly settings: BatcherSettings) {}

  /**
   * Runs `operations` in the next batch of their queue. An ack of more receipts, or a reserve
   * of more jobs, than the server takes in one entry (`maxBatch`) travels as several entries
   * of the same batch, which run one after the other in one storage unit, answered as the one
   * operation it was. Each entry is refused or done on its own, though: a receipt that is not
   * of the queue fails its entry and the call, while the other entries' acks stand (the error
   * says so). An operation too large for any batch fails alone with PAYLOAD_TOO_LARGE, unsent,
   * as the server would refuse it. With `whole` (a caller's `execute`: one unit of the storage,
   * R20) the operations travel in one batch, never split, and a list that one batch cannot
   * hold is refused whole, unsent.
   */
  async submit(
    queue: string,
    operations: readonly WireOperation[],
    whole = false,
  ): Promise<WireOutcome[]> {
    const limits = await this.settings.limits();
    this.limits = limits;
    const { maxBatch } = limits;
    if (!operations.some((operation) => entriesOf(operation) > maxBatch)) {
      if (whole) refuseOverBatch(operations.length, operations.length, limits);
      return this.enqueue(queue, operations, limits, whole);
    }
    const parts = operations.map((operation) => splitEntries(operation, maxBatch));
    const flat = parts.flat();
    if (whole) refuseOverBatch(operations.length, flat.length, limits);
    const outcomes = await this.enqueue(queue, flat, limits, whole);
    let at = 0;
    return parts.map((part) => {
      const answers = outcomes.slice(at, at + part.length);
      at += part.length;
      return part.length === 1 ? (answers[0] as WireOutcome) : joinOutcomes(answers);
    });
  }

  private enqueue(
    queue: string,
    operations: readonly WireOperation[],
    limits: BatchLimits,
    whole: boolean,
  ): Promise<WireOutcome[]> {
    const sizes = this.measure(queue, operations, limits);
    if (whole) {
      const room = limits.maxBytes - this.settings.envelopeBytes(queue);
      let total = 0;
      for (const size of sizes) total += size;
      if (total > room) {
        throw new RemoteError(
          'PAYLOAD_TOO_LARGE',
          413,
          `the ${operations.length} operations of this execute are ${total} bytes of JSON; they run as one unit, sent in one batch, and the server takes at most ${limits.maxBytes} bytes in one: run them as several executes`,
        );
      }
    }
    return new Promise((resolve, reject) => {
      let list = this.waiting.get(queue);
      if (list === undefined) {
        list = [];
        this.waiting.set(queue, list);
      }
      let bytes = 0;
      for (const size of sizes) bytes += size;
      list.push({ operations, sizes, bytes, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  /**
   * The bytes of each operation as it travels (its JSON and a comma). One that cannot fit in a
   * batch on its own is refused here: sent, it would be refused by the server (over the
   * stream, by closing the connection, which fails every other call on it).
   */
  private measure(
    queue: string,
    operations: readonly WireOperation[],
    limits: BatchLimits,
  ): number[] {
    // Serializing costs time: skipped when the server's byte limit is not known.
    if (limits.maxBytes === Number.POSITIVE_INFINITY) return operations.map(() => 0);
    const room = limits.maxBytes - this.settings.envelopeBytes(queue);
    return operations.map((operation) => {
      const size = operationBytes(operation);
      if (size > room) {
        throw new RemoteError(
          'PAYLOAD_TOO_LARGE',
          413,
          `the ${operation.type} operation is ${size - 1} bytes of JSON; the server takes at most ` +
            `${limits.maxBytes} bytes in one batch`,
        );
      }
      return size;
    });
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.waiting;
    this.waiting = new Map();
    const limits = this.limits as BatchLimits;
    for (const [queue, waiting] of all) {
      const room = limits.maxBytes - this.settings.envelopeBytes(queue);
      let batch: Waiting[] = [];
      let size = 0;
      let bytes = 0;
      for (const entry of waiting) {
        if (
          batch.length > 0 &&
          (size + entry.operations.length > limits.maxBatch || bytes + entry.bytes > room)
        ) {
          void this.sendBatch(queue, batch, limits.maxBatch, room);
          batch = [];
          size = 0;
          bytes = 0;
        }
        batch.push(entry);
        size += entry.operations.length;
        bytes += entry.bytes;
      }
      if (batch.length > 0) void this.sendBatch(queue, batch, limits.maxBatch, room);
    }
  }

  /**
   * One batch for the entries; a caller whose own list is over maxBatch, or over the bytes a
   * batch has room for, is split into parts sent one after the other.
   */
  private async sendBatch(
    queue: string,
    entries: Waiting[],
    maxBatch: number,
    room: number,
  ): Promise<void> {
    try {
      const all =
        entries.length === 1
          ? (entries[0]?.operations ?? [])
          : entries.flatMap((entry) => entry.operations);
      const sizes =
        entries.length === 1 ? (entries[0]?.sizes ?? []) : entries.flatMap((e) => e.sizes);
      let outcomes: WireOutcome[];
      const parts = partition(sizes, maxBatch, room);
      if (parts.length === 1) {
        outcomes = await this.settings.send(queue, all as WireOperation[]);
      } else {
        outcomes = [];
        // One part after the other, so that they run in the order the caller gave.
        let start = 0;
        for (const count of parts) {
          outcomes.push(...(await this.settings.send(queue, all.slice(start, start + count))));
          start += count;
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

/** An execute's operations run as one unit, so one batch must hold them all (`entries` of them, split acks and reserves counted). */
function refuseOverBatch(operations: number, entries: number, limits: BatchLimits): void {
  const { maxBatch } = limits;
  if (entries <= maxBatch) return;
  const whose =
    limits.maxBatchIsOption === true
      ? `this client sends at most ${maxBatch} in one (its maxBatch option)`
      : `the server takes at most ${maxBatch} in one (its maxBatch)`;
  const counted =
    entries === operations
      ? ''
      : ` (${entries} entries, its acks and reserves counted in entries of at most maxBatch)`;
  throw new ValidationError(
    `execute runs its ${operations} operations${counted} as one unit, sent in one batch, and ${whose}: run them as several executes, or raise maxBatch`,
  );
}

/** How many operations go in each consecutive batch: at most maxBatch, and `room` bytes. */
function partition(sizes: readonly number[], maxBatch: number, room: number): number[] {
  const parts: number[] = [];
  let count = 0;
  let bytes = 0;
  for (const size of sizes) {
    if (count > 0 && (count === maxBatch || bytes + size > room)) {
      parts.push(count);
      count = 0;
      bytes = 0;
    }
    count += 1;
    bytes += size;
  }
  if (count > 0 || parts.length === 0) parts.push(count);
  return parts;
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

/**
 * The answers of a split operation as its one answer: the values in order, or the first
 * refusal, which tells what the parts not refused did (they are not undone): the call took
 * effect in part, so not one to retry blindly (`mayHaveTakenEffect`).
 */
function joinOutcomes(answers: readonly WireOutcome[]): WireOutcome {
  const refused = answers.find((answer) => !answer.ok);
  if (refused !== undefined) {
    const done = answers.filter((answer) => answer.ok).length;
    if (done === 0) return refused;
    return {
      ok: false,
      error: {
        ...refused.error,
        message: `${refused.error.message} (this call went as ${answers.length} entries of at most the server's maxBatch; ${done} of them, not refused, took effect)`,
        mayHaveTakenEffect: true,
      },
    };
  }
  return {
    ok: true,
    value: answers.flatMap((answer) => (answer.ok ? (answer.value as unknown[]) : [])),
  };
}
