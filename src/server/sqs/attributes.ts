import { showName } from '../../core/errors.js';
import {
  QUEUE_NAME,
  type QueueOptions,
  type QueueStats,
  type ResolvedQueueOptions,
} from '../../core/index.js';
import type { Limits } from '../limits.js';
import type { QueueMeta } from './catalog.js';
import { invalidParameter, SqsError } from './errors.js';
import { isFifo } from './fifo.js';
import { checkSecondsWithin } from './server-limits.js';

const MS = 1000;
/** SQS's bounds on a RedrivePolicy's maxReceiveCount. */
export const MAX_RECEIVE_COUNT = 1000;
/** SQS's bound on a message's total invisibility after a receive (12 h), as the queue's maxLease. */
export const MAX_VISIBILITY_SECONDS = 43_200;
export const SQS_QUEUE_OPTIONS = {
  maxLease: MAX_VISIBILITY_SECONDS * MS,
  // No RedrivePolicy: SQS never dead-letters, so neither does the queue.
  maxDeliveries: Number.POSITIVE_INFINITY,
} as const satisfies QueueOptions;

type Rule =
  | { kind: 'option'; min: number; max: number }
  /** Seconds kept as the queue's `retention` (R30) in ms. */
  | { kind: 'retention'; min: number; max: number; default: number }
  | { kind: 'integer'; min: number; max: number; default?: number }
  | { kind: 'text'; default?: string }
  /** A policy document: a JSON object, kept and returned (no effect); "" removes it, as in SQS. */
  | { kind: 'policy' }
  | { kind: 'boolean'; default?: string }
  | { kind: 'redrive' }
  | { kind: 'fifo-flag' }
  /** A FIFO queue's setting, one of `values` (`anyCase`: as SQS reads booleans); refused on standard queues. */
  | { kind: 'fifo-only'; values: readonly string[]; default: string; anyCase?: true };

/** Attributes in seconds that a limit of the server bounds too. */
const SERVER_BOUND: Readonly<Record<string, 'delay' | 'wait'>> = {
  DelaySeconds: 'delay',
  ReceiveMessageWaitTimeSeconds: 'wait',
};

/** Every attribute a request may set, with its bounds; what leaseq keeps in its options first. */
const SETTABLE: Readonly<Record<string, Rule>> = {
  VisibilityTimeout: { kind: 'option', min: 0, max: MAX_VISIBILITY_SECONDS },
  DelaySeconds: { kind: 'integer', min: 0, max: 900, default: 0 },
  ReceiveMessageWaitTimeSeconds: { kind: 'integer', min: 0, max: 20, default: 0 },
  MessageRetentionPeriod: { kind: 'retention', min: 60, max: 1_209_600, default: 345_600 },
  MaximumMessageSize: { kind: 'integer', min: 1024, max: 1_048_576, default: 1_048_576 },
  KmsDataKeyReusePeriodSeconds: { kind: 'integer', min: 60, max: 86_400 },
  Policy: { kind: 'policy' },
  RedriveAllowPolicy: { kind: 'policy' },
  KmsMasterKeyId: { kind: 'text' },
  // SQS encrypts a new queue with its own keys (SSE-SQS) unless told otherwise or given a KMS
  // key: see `storedAttribute`.
  SqsManagedSseEnabled: { kind: 'boolean', default: 'true' },
  RedrivePolicy: { kind: 'redrive' },
  FifoQueue: { kind: 'fifo-flag' },
  ContentBasedDeduplication: {
    kind: 'fifo-only',
    values: ['true', 'false'],
    default: 'false',
    anyCase: true,
  },
  DeduplicationScope: { kind: 'fifo-only', values: ['queue', 'messageGroup'], default: 'queue' },
  // Kept and returned; leaseq has one throughput whatever it says.
  FifoThroughputLimit: {
    kind: 'fifo-only',
    values: ['perQueue', 'perMessageGroupId'],
    default: 'perQueue',
  },
};

const COUNTS = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
] as const;
const READ_ONLY = [...COUNTS, 'CreatedTimestamp', 'LastModifiedTimestamp', 'QueueArn'];
export const ALL_ATTRIBUTE_NAMES: readonly string[] = [...READ_ONLY, ...Object.keys(SETTABLE)];

export interface AttributeChange {
  /** What goes into the leaseq queue's options. */
  options: QueueOptions;
  /** What the catalog keeps, as SQS spells it. */
  stored: Record<string, string>;
  /**
   * A RedrivePolicy given: the dead-letter queue it names (which must exist), or null when
   * the policy was emptied. Its options are in `options` (deadLetterQueue, maxDeliveries).
   */
  redriveTarget?: string | null;
}

/**
 * Whether CreateQueue's attributes ask for a FIFO queue: `FifoQueue` `true` or `false` (any
 * case, as SQS reads it), absent meaning standard.
 */
export function fifoRequested(given: Readonly<Record<string, string>>): boolean {
  const value = given.FifoQueue;
  if (value === undefined) return false;
  const flag = value.toLowerCase();
  if (flag !== 'true' && flag !== 'false') throw invalidValue('FifoQueue', value);
  return flag === 'true';
}

/**
 * Checks attributes of CreateQueue / SetQueueAttributes for a queue of the given type (FIFO or
 * standard, which never changes); the first problem is the error.
 */
export function parseQueueAttributes(
  given: Readonly<Record<string, string>>,
  fifo: boolean,
  /** The server's limits, where the attributes set a queue's lease, delay or wait. */
  limits?: Limits,
): AttributeChange {
  const change: AttributeChange = { options: {}, stored: {} };
  for (const [name, value] of Object.entries(given)) {
    const rule = settableRule(name);
    if (rule === undefined) {
      throw new SqsError(
        'InvalidAttributeName',
        READ_ONLY.includes(name)
          ? `Attribute ${name} is read-only.`
          : `Unknown Attribute ${showName(name, false)}.`,
      );
    }
    switch (rule.kind) {
      case 'option': {
        const seconds = integerValue(name, value, rule);
        if (limits !== undefined) checkSecondsWithin(limits, 'visibility', name, seconds);
        change.options.visibility = Math.max(1, seconds * MS);
        break;
      }
      case 'retention':
        change.options.retention = integerValue(name, value, rule) * MS;
        break;
      case 'integer': {
        const number = integerValue(name, value, rule);
        const bound = SERVER_BOUND[name];
        if (limits !== undefined && bound !== undefined) {
          checkSecondsWithin(limits, bound, name, number);
        }
        change.stored[name] = String(number);
        break;
      }
      case 'text':
        change.stored[name] = value;
        break;
      case 'policy':
        if (value !== '' && !isJsonObject(value)) throw invalidValue(name, value);
        change.stored[name] = value;
        break;
      case 'boolean':
        if (value !== 'true' && value !== 'false') throw invalidValue(name, value);
        change.stored[name] = value;
        break;
      case 'redrive': {
        const redrive = redrivePolicy(value);
        Object.assign(change.options, redrive.options);
        change.redriveTarget = redrive.redriveTarget;
        break;
      }
      case 'fifo-flag':
        if (fifoRequested({ FifoQueue: value }) !== fifo) {
          throw new SqsError(
            'InvalidAttributeValue',
            `Invalid value for the parameter ${name}. Reason: Modifying queue type is not supported.`,
          );
        }
        if (fifo) change.stored[name] = 'true';
        break;
      case 'fifo-only': {
        if (!fifo) {
          throw new SqsError(
            'InvalidAttributeName',
            `You can specify the ${name} only when FifoQueue is set to true.`,
          );
        }
        const wanted = rule.anyCase === true ? value.toLowerCase() : value;
        const known = rule.values.find((each) => each === wanted);
        if (known === undefined) throw invalidValue(name, value);
        change.stored[name] = known;
        break;
      }
    }
  }
  return change;
}

/**
 * RedrivePolicy `{"deadLetterTargetArn": ARN, "maxReceiveCount": 1..1000}` (the count as a
 * number or a string) as the queue's deadLetterQueue and maxDeliveries (R13, R26); an empty
 * policy removes both (SQS never dead-letters without one).
 */
function redrivePolicy(value: string): Pick<AttributeChange, 'options' | 'redriveTarget'> {
  if (value === '') {
    return {
      options: { deadLetterQueue: null, maxDeliveries: Number.POSITIVE_INFINITY },
      redriveTarget: null,
    };
  }
  const bad = (reason: string) => invalidParameter('RedrivePolicy', value, reason);
  let policy: unknown;
  try {
    policy = JSON.parse(value);
  } catch {
    throw bad('Redrive policy is not a valid JSON map.');
  }
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    throw bad('Redrive policy is not a valid JSON map.');
  }
  const {
    deadLetterTargetArn: arn,
    maxReceiveCount: rawCount,
    ...rest
  } = policy as Record<string, unknown>;
  if (Object.keys(rest).length > 0) {
    throw bad(
      `Unknown field ${showName(Object.keys(rest)[0] ?? '', false)} in the redrive policy.`,
    );
  }
  if (typeof arn !== 'string' || arn === '') {
    throw bad('Redrive policy does not contain mandatory attribute: deadLetterTargetArn.');
  }
  const target = arn.split(':').pop() ?? '';
  if (!QUEUE_NAME.test(target)) throw bad('Dead letter target does not exist.');
  const count =
    typeof rawCount === 'number' || (typeof rawCount === 'string' && /^\d{1,4}$/.test(rawCount))
      ? Number(rawCount)
      : Number.NaN;
  if (!(Number.isInteger(count) && count >= 1 && count <= MAX_RECEIVE_COUNT)) {
    throw bad(`Value for maxReceiveCount must be an integer from 1 to ${MAX_RECEIVE_COUNT}.`);
  }
  return { options: { deadLetterQueue: target, maxDeliveries: count }, redriveTarget: target };
}

/**
 * The options of a SetQueueAttributes for a queue whose maxDeliveries is `current`: a
 * RedrivePolicy's maxReceiveCount of SQS's largest, 1000, leaves a larger limit (or none, set
 * through /v1) as it is, since GetQueueAttributes shows such a limit as 1000 — a policy read
 * and set back changes nothing.
 */
export function keepingLargerLimit(options: QueueOptions, current: number): QueueOptions {
  if (options.maxDeliveries !== MAX_RECEIVE_COUNT || current <= MAX_RECEIVE_COUNT) return options;
  const { maxDeliveries: _kept, ...rest } = options;
  return rest;
}

export interface QueueFacts {
  arn: string;
  /** The ARN of another queue of this endpoint. */
  arnOf: (queue: string) => string;
  options: ResolvedQueueOptions;
  meta: QueueMeta | undefined;
  /** Needed only when a count is asked for. */
  stats: () => Promise<QueueStats>;
}

/** The attributes a GetQueueAttributes names (or `All`), as SQS answers them. */
export async function readQueueAttributes(
  names: readonly string[],
  facts: QueueFacts,
): Promise<Record<string, string>> {
  for (const name of names) {
    if (name !== 'All' && !ALL_ATTRIBUTE_NAMES.includes(name)) {
      throw new SqsError('InvalidAttributeName', `Unknown Attribute ${showName(name, false)}.`);
    }
  }
  const wanted = names.includes('All') ? ALL_ATTRIBUTE_NAMES : names;
  const stats = wanted.some((name) => (COUNTS as readonly string[]).includes(name))
    ? await facts.stats()
    : undefined;
  const result: Record<string, string> = {};
  for (const name of wanted) {
    const value = attributeValue(name, facts, stats);
    if (value !== undefined) result[name] = value;
  }
  return result;
}

/**
 * A stored attribute, or its default when the queue never had it set (FIFO settings: on FIFO
 * queues only).
 */
export function storedAttribute(meta: QueueMeta | undefined, name: string): string | undefined {
  const rule = settableRule(name);
  const fallback =
    (rule?.kind === 'integer' || rule?.kind === 'retention') && rule.default !== undefined
      ? String(rule.default)
      : rule?.kind === 'text' || rule?.kind === 'boolean'
        ? rule.default
        : rule?.kind === 'fifo-only' && isFifo(meta)
          ? rule.default
          : undefined;
  const stored = meta?.attributes[name];
  // A policy set to "" was removed: SQS no longer lists it.
  if (rule?.kind === 'policy' && stored === '') return undefined;
  // A queue has one kind of server-side encryption: one that names a KMS key (SSE-KMS, or none
  // once the key is set to "") does not have SQS's own unless it was set so.
  if (name === 'SqsManagedSseEnabled' && stored === undefined) {
    return meta?.attributes.KmsMasterKeyId === undefined ? fallback : 'false';
  }
  return stored ?? fallback;
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

function attributeValue(
  name: string,
  facts: QueueFacts,
  stats: QueueStats | undefined,
): string | undefined {
  const seconds = (ms: number | undefined) =>
    ms === undefined ? undefined : String(Math.floor(ms / MS));
  switch (name) {
    case 'ApproximateNumberOfMessages':
      // Messages behind an in-flight one of their group (R24) wait to be received too.
      return String((stats?.ready ?? 0) + (stats?.waiting ?? 0));
    case 'ApproximateNumberOfMessagesNotVisible':
      return String(stats?.active ?? 0);
    case 'ApproximateNumberOfMessagesDelayed':
      return String(stats?.delayed ?? 0);
    case 'CreatedTimestamp':
      return seconds(facts.meta?.createdMs);
    case 'LastModifiedTimestamp':
      return seconds(facts.meta?.modifiedMs);
    case 'QueueArn':
      return facts.arn;
    case 'VisibilityTimeout':
      return seconds(facts.options.visibility);
    case 'MessageRetentionPeriod':
      // The queue's retention is the truth (R30); a queue made through /v1 without one keeps
      // its messages without a bound, and SQS has no word for that: its default is shown.
      return seconds(facts.options.retention) ?? storedAttribute(facts.meta, name);
    case 'RedrivePolicy':
      // The queue's options are the truth: they may also have been set through /v1, where a
      // limit above SQS's largest count, or none, is shown as that count (see
      // `keepingLargerLimit`): always a count SQS could answer and SetQueueAttributes takes.
      return facts.options.deadLetterQueue === undefined
        ? undefined
        : JSON.stringify({
            deadLetterTargetArn: facts.arnOf(facts.options.deadLetterQueue),
            maxReceiveCount: Math.min(facts.options.maxDeliveries, MAX_RECEIVE_COUNT),
          });
    default:
      return storedAttribute(facts.meta, name);
  }
}

/** Own members only: `constructor` or `__proto__` are unknown names, not rules. */
function settableRule(name: string): Rule | undefined {
  return Object.hasOwn(SETTABLE, name) ? SETTABLE[name] : undefined;
}

function integerValue(name: string, value: string, rule: { min: number; max: number }): number {
  const number = /^\d{1,10}$/.test(value) ? Number(value) : Number.NaN;
  if (!(number >= rule.min && number <= rule.max)) throw invalidValue(name, value);
  return number;
}

function invalidValue(name: string, value: string): SqsError {
  return new SqsError(
    'InvalidAttributeValue',
    `Invalid value for the parameter ${name}: ${value}.`,
  );
}
