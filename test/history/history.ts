/**
 * A history (Jepsen style): every operation a producer or consumer called, with when it was
 * called, when it answered, and what it answered. The fault suite (real processes) and the
 * simulation (one process, simulated time) both record one, and both hand it to the same
 * checkers (checkers.ts).
 *
 * Two clocks appear. `invokedAt` / `completedAt` are the recorder's clock (the test process's
 * monotonic ms, or simulated time). `issuedAt` / `deadline` of a delivery are the server's
 * clock: the one its leases are measured in.
 */

/**
 * What the caller knows of an operation's effect. `ok`: it answered. `fail`: it surely did not
 * happen (refused before it reached the storage). `unknown`: no answer (connection cut, timeout,
 * server killed): it may or may not have happened.
 */
export type Outcome = 'ok' | 'fail' | 'unknown';

/** One delivery as a receive answered it. */
export interface DeliveryRecord {
  id: string;
  token: number;
  /** Server time the lease was granted (deadline − visibility when the server does not say). */
  issuedAt: number;
  /** Server time the lease ends. */
  deadline: number;
  deliveryCount: number;
  payloadHash: string;
  /** The session the delivery belongs to, if any. */
  session?: string;
}

interface Timed {
  /** Who called: a producer, a consumer, an admin. */
  process: string;
  invokedAt: number;
  completedAt: number;
  outcome: Outcome;
}

export interface PublishOp extends Timed {
  f: 'publish';
  ids: string[];
  payloadHashes: string[];
}

export interface ReceiveOp extends Timed {
  f: 'receive';
  deliveries: DeliveryRecord[];
}

/** ack, nack (requeue) and reject (dead-letter): `applied` is the server's true/false. */
export interface SettleOp extends Timed {
  f: 'ack' | 'nack' | 'reject';
  id: string;
  token: number;
  applied?: boolean;
}

export interface ExtendOp extends Timed {
  f: 'extend';
  id: string;
  token: number;
  /** The new deadline (server time), or null for a delivery no longer live. */
  deadline?: number | null;
}

export interface RedriveOp extends Timed {
  f: 'redrive';
  ids: string[];
}

/** The caller learned that its session ended (closed by it, or SESSION_CLOSED answered). */
export interface SessionEndOp extends Timed {
  f: 'session-end';
  session: string;
}

/**
 * The storage crashed and came back (a fault, not a caller): a reservation committed without
 * waiting for a flush shortly before may be lost with it, as R21 allows (a lost reservation is a
 * lease that ran out). `from` and `to` are the server's clock when the crash began and when the
 * storage answered again.
 */
export interface StorageCrashOp extends Timed {
  f: 'storage-crash';
  from: number;
  to: number;
}

export type Op =
  | PublishOp
  | ReceiveOp
  | SettleOp
  | ExtendOp
  | RedriveOp
  | SessionEndOp
  | StorageCrashOp;

/** What the storage holds after the final drain. */
export interface FinalState {
  dead: { id: string; reason: string }[];
  /** Ids still ready, delayed or active: a complete drain leaves none. */
  left: string[];
}

/** A stable text of a JSON value, hashed (FNV-1a, 32 bits): compares payloads cheaply. */
export function payloadHash(value: unknown): string {
  const text = value === undefined ? 'undefined' : JSON.stringify(value);
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, '0');
}

type Body<T extends Op> = Omit<T, 'invokedAt' | 'completedAt' | 'outcome' | 'process'>;

/** An op before it completed (distributes over the kinds of op). */
export type Uncompleted<T extends Op = Op> = T extends Op ? Omit<T, 'completedAt'> : never;

/**
 * Records operations around the calls that make them. `classify` decides whether a failed
 * call is `fail` (surely not applied) or `unknown`.
 */
export class HistoryRecorder {
  readonly ops: Op[] = [];

  constructor(
    private readonly now: () => number,
    private readonly classify: (error: unknown) => Outcome = () => 'unknown',
  ) {}

  /**
   * Calls `call`, then records the op built from its answer (`done`) or, when it throws, the
   * op as invoked (`body`) with the error's outcome; rethrows.
   */
  async record<T extends Op, R>(
    process: string,
    body: Body<T>,
    call: () => Promise<R>,
    done: (answer: R) => Partial<Body<T>>,
  ): Promise<R> {
    const invokedAt = this.now();
    try {
      const answer = await call();
      this.push({ ...body, ...done(answer), process, invokedAt, outcome: 'ok' } as T);
      return answer;
    } catch (error) {
      this.push({ ...body, process, invokedAt, outcome: this.classify(error) } as T);
      throw error;
    }
  }

  /** Adds an op recorded elsewhere (its completedAt is now). */
  push(op: Uncompleted): void {
    this.ops.push({ ...op, completedAt: this.now() } as Op);
  }

  /** Operation counts by kind and outcome, for reports: `{ publish: { ok, fail, unknown } }`. */
  counts(): Record<string, Record<Outcome, number>> {
    const counts: Record<string, Record<Outcome, number>> = {};
    for (const op of this.ops) {
      counts[op.f] ??= { ok: 0, fail: 0, unknown: 0 };
      (counts[op.f] as Record<Outcome, number>)[op.outcome] += 1;
    }
    return counts;
  }
}
