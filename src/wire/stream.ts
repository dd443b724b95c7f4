import { showName, UnknownNames } from '../core/errors.js';
import { QUEUE_NAME, ValidationError } from '../core/index.js';
import type { WireDelivery } from './delivery.js';
import type { WireError, WireOutcome } from './operations.js';

/**
 * The frames of the stream (docs/stream.md): JSON text messages over one WebSocket. Every
 * frame a client sends carries an `id` (a positive integer it chooses) that the answer repeats.
 */
export type ClientFrame = BatchFrame | SubscribeFrame | CreditFrame | UnsubscribeFrame;

/** Operations of one queue, as `POST /v1/queues/{name}/operations` takes them. */
export interface BatchFrame {
  type: 'batch';
  id: number;
  queue: string;
  operations: unknown[];
}

/** Asks for deliveries to be pushed, at most `prefetch` unsettled at once. */
export interface SubscribeFrame {
  type: 'subscribe';
  id: number;
  queue: string;
  prefetch: number;
  visibility?: number;
  /** A session handle: deliveries are made in that session (R16). */
  session?: string;
}

/** Changes the prefetch of a subscription. */
export interface CreditFrame {
  type: 'credit';
  id: number;
  subscription: number;
  prefetch: number;
}

export interface UnsubscribeFrame {
  type: 'unsubscribe';
  id: number;
  subscription: number;
}

export type ServerFrame =
  | ReadyFrame
  | ResultsFrame
  | SubscribedFrame
  | DeliveriesFrame
  | UnsubscribedFrame
  | ErrorFrame;

/** The first frame of a connection: what the server allows on it. */
export interface ReadyFrame {
  type: 'ready';
  version: string;
  limits: StreamLimits;
}

export interface StreamLimits {
  maxFrameBytes: number;
  maxBatch: number;
  maxPrefetch: number;
  maxSubscriptions: number;
  heartbeatMs: number;
  /** Deepest nesting of a frame the server takes (absent from servers before it was sent). */
  maxJsonDepth?: number;
}

export interface ResultsFrame {
  type: 'results';
  id: number;
  results: WireOutcome[];
}

export interface SubscribedFrame {
  type: 'subscribed';
  id: number;
  subscription: number;
  prefetch: number;
}

/**
 * Deliveries pushed to a subscription; each counts against its prefetch until settled. `now`
 * is the server's time as it pushed them, the clock of their `deadline`s: a client holding a
 * pushed delivery knows how much of its lease is left without sharing the server's clock.
 */
export interface DeliveriesFrame {
  type: 'deliveries';
  subscription: number;
  now: number;
  deliveries: WireDelivery[];
}

/** A subscription ended: asked for (`id`), or by the server with the `error` that ended it. */
export interface UnsubscribedFrame {
  type: 'unsubscribed';
  subscription: number;
  id?: number;
  error?: { code: string; message: string };
}

/**
 * A frame that was refused and changed nothing; `id` when the frame had a readable one. But for
 * a batch whose one redrive, purge or moveJobs failed after some of its steps: its error says
 * how many jobs they took (`doneCount`, R20).
 */
export interface ErrorFrame {
  type: 'error';
  id?: number;
  error: WireError;
}

/** Close codes of the stream: the standard one it uses, and its own (4000–4999 are the application's). */
export const STREAM_CLOSE = {
  /** The client did not read what was sent to it for too long. */
  slowConsumer: 4008,
  /** No pong came back for a ping within the heartbeat. */
  heartbeatTimeout: 4009,
  /** The server is shutting down, its answers owed all sent (the standard "going away"). */
  shuttingDown: 1001,
} as const;

/** The `id` of a frame that has a usable one, to name it in an error frame. */
export function frameId(value: unknown): number | undefined {
  const id = (value as { id?: unknown } | null)?.id;
  return isPositiveInteger(id) ? id : undefined;
}

/** Checks one parsed client frame; throws a ValidationError naming every problem. */
export function clientFrameFromWire(value: unknown): ClientFrame {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError('a frame must be a JSON object');
  }
  const frame = value as Record<string, unknown>;
  const problems: string[] = [];
  // Own keys only: `toString` or `__proto__` must not find Object.prototype's members.
  const allowed =
    typeof frame.type === 'string' && Object.hasOwn(FIELDS, frame.type)
      ? FIELDS[frame.type as ClientFrame['type']]
      : undefined;
  if (allowed === undefined) {
    throw new ValidationError(
      `type must be one of ${Object.keys(FIELDS).join(', ')}, got ${JSON.stringify(frame.type)}`,
    );
  }
  const unknown = new UnknownNames(problems);
  for (const key of Object.keys(frame)) {
    if (key !== 'type' && !Object.hasOwn(allowed, key))
      unknown.add('unknown field', () => `unknown field ${showName(key, false)}`);
  }
  for (const [key, spec] of Object.entries(allowed)) {
    const field = frame[key];
    if (field === undefined) {
      if (spec.required) problems.push(`${key} is required`);
      continue;
    }
    const problem = spec.check(field);
    if (problem !== undefined) problems.push(`${key} ${problem}`);
  }
  if (problems.length > 0) throw new ValidationError(problems);
  return frame as unknown as ClientFrame;
}

interface FieldSpec {
  required: boolean;
  /** A problem with the value, or undefined. */
  check(value: unknown): string | undefined;
}

const positiveInteger: FieldSpec = {
  required: true,
  check: (value) => (isPositiveInteger(value) ? undefined : 'must be an integer ≥ 1'),
};
const optionalPositiveInteger: FieldSpec = { ...positiveInteger, required: false };
const queue: FieldSpec = {
  required: true,
  check: (value) =>
    typeof value === 'string' && QUEUE_NAME.test(value)
      ? undefined
      : 'must be a queue name (1 to 80 letters, digits, _, - or ., starting with a letter or digit)',
};
const operations: FieldSpec = {
  required: true,
  check: (value) =>
    Array.isArray(value) && value.length > 0 ? undefined : 'must be a non-empty array',
};
const session: FieldSpec = {
  required: false,
  check: (value) =>
    typeof value === 'string' && value.length > 0 ? undefined : 'must be a session handle',
};

const FIELDS: Record<ClientFrame['type'], Record<string, FieldSpec>> = {
  batch: { id: positiveInteger, queue, operations },
  subscribe: {
    id: positiveInteger,
    queue,
    prefetch: positiveInteger,
    visibility: optionalPositiveInteger,
    session,
  },
  credit: { id: positiveInteger, subscription: positiveInteger, prefetch: positiveInteger },
  unsubscribe: { id: positiveInteger, subscription: positiveInteger },
};

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}
