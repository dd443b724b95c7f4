import { MAX_ID_LENGTH, OPERATION_TYPES, QUEUE_NAME, type QueueStats } from '../core/index.js';
import { type ErrorCode, MAX_RECEIPT_LENGTH, STATUS_BY_CODE } from '../wire/index.js';
import type { Limits } from './limits.js';

/** A JSON Schema (draft 7, as Ajv and OpenAPI 3.1 read it). */
export type JsonSchema = Record<string, unknown>;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const OPAQUE = '^[A-Za-z0-9_-]+$';

export function integer(minimum: number, maximum = MAX_SAFE): JsonSchema {
  return { type: 'integer', minimum, maximum };
}

/** A positive bound where `null` means none (Infinity in the Queue interface). */
export function bound(maximum = MAX_SAFE): JsonSchema {
  return { type: ['integer', 'null'], minimum: 1, maximum };
}

/** An object with exactly these properties (no others), of which `required` must be present. */
export function object(
  properties: Record<string, JsonSchema>,
  required: string[] = [],
): JsonSchema {
  return { type: 'object', additionalProperties: false, properties, required };
}

/** A count in a query string (text there): digits, its range checked where it is read. */
export function queryCount(description: string): JsonSchema {
  return { type: 'string', pattern: '^[0-9]{1,16}$', description };
}

export function arrayOf(items: JsonSchema, maxItems?: number): JsonSchema {
  return maxItems === undefined ? { type: 'array', items } : { type: 'array', items, maxItems };
}

const boolean: JsonSchema = { type: 'boolean' };
export const text: JsonSchema = { type: 'string' };
/** Any JSON value: payloads are opaque. */
export const anyJson: JsonSchema = {};

export const queueName: JsonSchema = {
  type: 'string',
  pattern: QUEUE_NAME.source,
  description: '1 to 80 letters, digits, `_`, `-` or `.`, starting with a letter or digit',
};
/**
 * R18 counts text in UTF-16 code units, where JSON Schema's maxLength counts characters: the
 * description says which count holds (an id of 129 emoji passes maxLength and is refused).
 */
const UTF16_LENGTH =
  'UTF-16 code units, as JavaScript counts a string length: a character outside the Basic Multilingual Plane, such as an emoji, counts two';
export const jobId: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_ID_LENGTH,
  description: `1 to ${MAX_ID_LENGTH} ${UTF16_LENGTH}; well-formed Unicode without U+0000 (R18)`,
};
export const receipt: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_RECEIPT_LENGTH,
  pattern: OPAQUE,
  description: 'the opaque receipt of one delivery, as receive returned it',
};
export const sessionHandle: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 512,
  pattern: OPAQUE,
  description: 'the opaque session handle that opening the session returned',
};
const reason: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 1024,
  description: `1 to 1024 ${UTF16_LENGTH}; well-formed Unicode without U+0000 (R18)`,
};

export const queueParams = object({ name: queueName }, ['name']);
export const jobParams = object({ name: queueName, id: jobId }, ['name', 'id']);

/**
 * Every code an error answer may carry, by its status: the OpenAPI document's enum of `code`
 * (serializing does not apply it).
 */
const ERROR_CODES = Object.keys(STATUS_BY_CODE) as ErrorCode[];

const errorCode: JsonSchema = {
  type: 'string',
  enum: ERROR_CODES,
  description: `stable, to branch on; its HTTP status: ${ERROR_CODES.map((code) => `${code} ${STATUS_BY_CODE[code]}`).join(', ')} (INVALID_ARGUMENT is 417 for an Expect header other than 100-continue). An operation refused in a batch has the code the same refusal has as a request. A later server may add codes: take one not listed here by its status`,
};

export const errorBody = object(
  {
    error: object(
      {
        code: errorCode,
        message: text,
        // queueTime and now: on INVALID_CLOCK, the queue's time and the refused now (ms).
        queueTime: integer(0),
        now: { type: 'number' },
        doneCount: {
          ...integer(0),
          description:
            'the error ended a redrive, purge or moveJobs taking steps (R20): how many jobs the steps before it took',
        },
        mayHaveTakenEffect: {
          type: 'boolean',
          description:
            'the call may or may not have taken effect: the storage failed while its commit was under way (absent: it took no effect)',
        },
        chain: {
          ...arrayOf(text),
          description:
            'CONFLICT of a deadLetterQueue that would loop back (R26): the way round, from the queue refused back to it; absent when the key may not see every queue on it',
        },
      },
      ['code', 'message'],
    ),
  },
  ['error'],
);

/** The plain numbers of `QueueStats` (R17), in the order the API lists them. */
export const STAT_NUMBERS = [
  'queueTime',
  'ready',
  'delayed',
  'active',
  'dead',
  'waiting',
  'sessions',
  'oldestReadyAge',
  'published',
  'duplicates',
  'refused',
  'deliveries',
  'redeliveries',
  'acks',
  'nacks',
  'unworked',
  'expiries',
  'sessionReleases',
  'extensions',
  'staleAcks',
  'staleNacks',
  'staleExtends',
  'redriven',
  'purged',
  'autoAcked',
  'cancelled',
  'expired',
] as const satisfies readonly (keyof QueueStats)[];

export type StatNumber = (typeof STAT_NUMBERS)[number];

const statsFields: Record<string, JsonSchema> = {
  ...Object.fromEntries(STAT_NUMBERS.map((name) => [name, integer(0)])),
  paused: boolean,
  deadLetters: { type: 'object', additionalProperties: integer(0) },
  processingTime: object({ count: integer(0), sum: integer(0), max: integer(0) }, [
    'count',
    'sum',
    'max',
  ]),
};

/** R17 figures of one queue. */
export const stats = object(statsFields, Object.keys(statsFields));

/** The whole state of one queue (admin). */
export const inspectView = object(
  {
    queueTime: integer(0),
    ready: arrayOf(jobId),
    delayed: arrayOf(object({ id: jobId, availableAt: integer(0) }, ['id', 'availableAt'])),
    active: arrayOf(
      object(
        {
          token: integer(1),
          id: jobId,
          deadline: integer(0),
          deliveryCount: integer(1),
          session: text,
        },
        ['token', 'id', 'deadline', 'deliveryCount'],
      ),
    ),
    dead: arrayOf(
      object({ id: jobId, reason: text, deliveryCount: integer(0) }, [
        'id',
        'reason',
        'deliveryCount',
      ]),
    ),
    waiting: arrayOf(jobId),
  },
  ['queueTime', 'ready', 'delayed', 'active', 'dead'],
);

/** Queue options shown only when set (see ResolvedQueueOptions). */
const SPARSE_OPTIONS = new Set(['deadLetterQueue', 'paused', 'retention', 'maxLength', 'overflow']);

/** The fields whose bound in a request schema is one of the server's limits (buildSchemas). */
const LIMITED_FIELDS: Readonly<Record<string, keyof Limits>> = {
  visibility: 'maxVisibilityMs',
  delay: 'maxDelayMs',
  wait: 'maxWaitMs',
  max: 'maxBatch',
};

/**
 * The server setting behind a schema refusal, so that its message says which limit a request
 * passed (one a server's operator may have lowered): a batch over `maxBatch` entries, or one of
 * LIMITED_FIELDS above its limit. Undefined for any other refusal.
 */
export function limitBehind(
  error: { keyword: string; instancePath: string; params: unknown },
  limits: Limits,
): keyof Limits | undefined {
  const bound = (error.params as { limit?: unknown }).limit;
  const setting =
    error.keyword === 'maxItems'
      ? 'maxBatch'
      : error.keyword === 'maximum'
        ? LIMITED_FIELDS[error.instancePath.slice(error.instancePath.lastIndexOf('/') + 1)]
        : undefined;
  return setting !== undefined && limits[setting] === bound ? setting : undefined;
}

/** Every request and response schema of the API, sized by the server's limits. */
export function buildSchemas(limits: Limits) {
  const visibility = integer(1, limits.maxVisibilityMs);
  const delay = integer(0, limits.maxDelayMs);
  const batch = (items: JsonSchema) => arrayOf(items, limits.maxBatch);
  const nackFields = {
    requeue: boolean,
    delay,
    reason,
    error: {
      ...reason,
      description: `what went wrong in this attempt, kept with it in the job's history (R9, R14); ${reason.description}`,
    },
    attempted: {
      ...boolean,
      description:
        'R33: false gives a delivery back unworked: it does not count as a delivery of the job (needs requeue)',
    },
  };
  const queueOptionFields = {
    visibility,
    prefetch: bound(),
    maxDeliveries: bound(),
    maxLease: bound(),
    dedupWindow: integer(0),
    deadLetterQueue: { ...queueName, type: ['string', 'null'] },
    paused: boolean,
    retention: {
      ...bound(),
      description:
        'R30: ms after its publish that a ready or delayed job dies with reason expired; null: none (the default)',
    },
    maxLength: {
      ...bound(),
      description: 'R31: the most ready jobs a publish may leave; null: none (the default)',
    },
    overflow: {
      type: ['string', 'null'],
      enum: ['reject', 'dead-letter-oldest', null],
      description:
        'R31: a publish beyond maxLength is refused with 409 QUEUE_FULL (reject, the default) or makes room: the oldest ready jobs die with reason maxlen',
    },
  };
  const origin = object({ queue: queueName, reason: text, at: integer(0) }, [
    'queue',
    'reason',
    'at',
  ]);
  const publishInput = object({
    id: jobId,
    payload: anyJson,
    delay,
    priority: { ...integer(0, 9), description: 'higher first; default 0 (R23)' },
    group: {
      ...jobId,
      description:
        'message group (R24): never active while another job of the group is; handed out in publish order',
    },
    expiresAt: {
      ...integer(0),
      description:
        "R30: the queue time (the server's clock, epoch ms) at which the job dies with reason expired if still ready or delayed",
    },
  });
  const nackEntry = object({ receipt, ...nackFields }, ['receipt']);
  const extendEntry = object({ receipt, visibility }, ['receipt', 'visibility']);
  const attempt = object(
    {
      token: integer(1),
      deliveredAt: integer(0),
      endedAt: integer(0),
      outcome: {
        type: 'string',
        enum: ['acked', 'requeued', 'rejected', 'expired', 'session-ended', 'cancelled'],
      },
      reason: text,
      error: text,
    },
    ['token', 'deliveredAt', 'endedAt', 'outcome'],
  );
  const count = integer(0);
  return {
    queueOptionsIn: object(queueOptionFields),
    queueOptionsOut: object(
      {
        ...queueOptionFields,
        deadLetterQueue: queueName,
        retention: integer(1),
        maxLength: integer(1),
        overflow: { type: 'string', enum: ['dead-letter-oldest'] },
      },
      Object.keys(queueOptionFields).filter((name) => !SPARSE_OPTIONS.has(name)),
    ),
    publishInput,
    publishBatch: object({ jobs: batch(publishInput) }, ['jobs']),
    publishResult: object(
      {
        id: jobId,
        duplicate: boolean,
        groupSeq: {
          ...integer(1),
          description: "grouped jobs: the job's group sequence number (R29)",
        },
      },
      ['id', 'duplicate'],
    ),
    receive: object({
      max: integer(1, limits.maxBatch),
      visibility,
      wait: integer(0, limits.maxWaitMs),
      session: sessionHandle,
      ack: {
        type: 'string',
        enum: ['manual', 'auto'],
        description:
          'auto: each job is removed as it is handed out (at most once: a consumer that fails loses it; R22)',
      },
    }),
    delivery: object(
      {
        receipt,
        token: integer(1),
        id: jobId,
        payload: anyJson,
        deadline: integer(0),
        deliveryCount: integer(1),
        redelivered: boolean,
        group: jobId,
        leaseAge: {
          ...integer(1),
          description:
            'ms the lease had already run when the server sent the delivery (a reservation its storage answered late); absent when none',
        },
      },
      ['receipt', 'token', 'id', 'deadline', 'deliveryCount', 'redelivered'],
    ),
    ack: object({ receipt }, ['receipt']),
    ackBatch: object({ receipts: batch(receipt) }, ['receipts']),
    nack: nackEntry,
    nackBatch: object({ entries: batch(nackEntry) }, ['entries']),
    extend: extendEntry,
    extendBatch: object({ entries: batch(extendEntry) }, ['entries']),
    entryError: errorBody,
    operations: object(
      {
        // Any value: each entry is read on its own (runOperations), so one that is no
        // operation (not an object, an unknown type) is refused in its place, as over the
        // stream, and does not fail the others.
        operations: batch({
          description: `an operation, {"type": …, …its fields}, type one of ${OPERATION_TYPES.join(', ')}; an entry that is none is refused in its place`,
        }),
      },
      ['operations'],
    ),
    sessionOpen: object({ prefetch: bound(), timeout: bound(), ackTimeout: bound() }),
    session: object({ session: sessionHandle }, ['session']),
    ackUpTo: object({ session: sessionHandle, token: integer(1) }, ['session', 'token']),
    nackUpTo: object({ session: sessionHandle, token: integer(1), ...nackFields }, [
      'session',
      'token',
    ]),
    ids: object({ ids: batch(jobId) }),
    count,
    attempt,
    deadLetter: object(
      {
        id: jobId,
        payload: {
          ...anyJson,
          description:
            "the job's payload; absent when it has none, and in a list read with `payload=false`",
        },
        reason: text,
        deliveryCount: count,
        deadAt: integer(0),
        history: arrayOf(attempt),
        origin,
      },
      ['id', 'reason', 'deliveryCount', 'deadAt', 'history'],
    ),
    job: object(
      {
        id: jobId,
        payload: anyJson,
        state: { type: 'string', enum: ['ready', 'delayed', 'active', 'dead', 'waiting'] },
        deliveryCount: count,
        publishedAt: integer(0),
        priority: integer(0, 9),
        group: jobId,
        groupSeq: integer(1),
        expiresAt: integer(0),
        availableAt: integer(0),
        token: integer(1),
        deadline: integer(0),
        reason: text,
        deadAt: integer(0),
        history: arrayOf(attempt),
        origin,
      },
      ['id', 'state', 'deliveryCount', 'history'],
    ),
  };
}

export type Schemas = ReturnType<typeof buildSchemas>;
