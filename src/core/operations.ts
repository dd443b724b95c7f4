import { type CodedError, ValidationError } from './errors.js';
import { isStorableText } from './text.js';
import type { Delivery, PublishResult, QueueStats } from './types.js';
import { MAX_ID_LENGTH, Problems, show } from './validate.js';

/**
 * The operations of SPEC.md as values. Every one is parsed once, where input enters (a public
 * method, an HTTP body, a transaction), into a frozen, fully resolved value (the jobs of a
 * publish are readonly by type only); below that edge nothing checks its arguments again. The
 * core applies them (`LeaseQueue.apply`), an engine executes a batch of them for one queue as
 * one unit, transports carry them.
 */
export type Operation =
  | PublishOperation
  | ReserveOperation
  | AckOperation
  | NackOperation
  | ExtendOperation
  | OpenSessionOperation
  | HeartbeatOperation
  | CloseSessionOperation
  | AckUpToOperation
  | NackUpToOperation
  | RedriveOperation
  | PurgeOperation
  | PurgeQueueOperation
  | MoveJobsOperation
  | CancelOperation
  | StatsOperation;

/** The name of an operation, its `type`: `publish`, `reserve`, `ack` … */
export type OperationType = Operation['type'];

/** One job to publish, resolved: `id` undefined means "generate one". */
export interface PublishJob {
  /** The job id; undefined: one is generated. */
  readonly id: string | undefined;
  /** The payload, JSON. */
  readonly payload: unknown;
  /** Ticks (ms above the core) until the job is ready; 0 means ready now. */
  readonly delay: number;
  /** 0 (default, lowest) to 9: higher priorities are handed out first (R23). */
  readonly priority: number;
  /** The message group (R24); undefined means none. */
  readonly group: string | undefined;
  /** R30: the queue time the job expires at while ready or delayed; undefined means none. */
  readonly expiresAt: number | undefined;
}

/** R4, R5: appends jobs, all-or-nothing. */
export interface PublishOperation {
  /** The operation's name. */
  readonly type: 'publish';
  /** The jobs, in publish order. */
  readonly jobs: readonly PublishJob[];
}

/**
 * How a reservation is settled: `manual` (R6, at-least-once: the holder acks) or `auto`
 * (R22, at-most-once: the job is removed as it is handed out).
 */
export type AckMode = 'manual' | 'auto';

/** R6: at most `max` deliveries; `visibility` undefined means the queue's. */
export interface ReserveOperation {
  /** The operation's name. */
  readonly type: 'reserve';
  /** At most this many deliveries. Positive integer. */
  readonly max: number;
  /** Lease length, ticks (ms above the core); undefined: the queue's visibility. */
  readonly visibility: number | undefined;
  /** The session the deliveries belong to (R16); undefined: none. */
  readonly session: string | undefined;
  /** `manual`: leased deliveries; `auto`: each job removed as it is handed out (R22). */
  readonly ack: AckMode;
}

/** R8: one answer per token, in order. */
export interface AckOperation {
  /** The operation's name. */
  readonly type: 'ack';
  /** The tokens of the deliveries to ack, answered in this order. */
  readonly tokens: readonly number[];
}

/** How a nacked delivery ends (R9). */
export interface NackDisposition {
  /** true: back to the front of ready (or to delayed); false: dead-lettered. */
  readonly requeue: boolean;
  /** With requeue: ticks (ms above the core) before the job is ready again; 0 when none. */
  readonly delay: number;
  /** With requeue false: the dead-letter reason (`rejected` unless given). */
  readonly reason: string;
  /** What went wrong in the attempt, kept in its history entry; undefined when none was given. */
  readonly error: string | undefined;
  /** false: given back unworked, no delivery of the job (R33). */
  readonly attempted: boolean;
}

/** R9 (`reject` is the same operation). */
export interface NackOperation extends NackDisposition {
  /** The operation's name. */
  readonly type: 'nack';
  /** The token of the delivery to nack. */
  readonly token: number;
}

/** R10. */
export interface ExtendOperation {
  /** The operation's name. */
  readonly type: 'extend';
  /** The token of the delivery to extend. */
  readonly token: number;
  /** The new lease from now, ticks (ms above the core); capped by `maxLease`. */
  readonly visibility: number;
}

/** R16; Infinity means "no bound". */
export interface OpenSessionOperation {
  /** The operation's name. */
  readonly type: 'openSession';
  /** Most live deliveries of the session; Infinity: no bound. */
  readonly prefetch: number;
  /** Heartbeat timeout, ticks (ms above the core); Infinity: none. */
  readonly timeout: number;
  /** Consumer timeout of each live delivery, ticks (ms above the core); Infinity: none. */
  readonly ackTimeout: number;
}

/** R16: a heartbeat of a session: its heartbeat timeout counts from now. */
export interface HeartbeatOperation {
  /** The operation's name. */
  readonly type: 'heartbeat';
  /** The session's id. */
  readonly session: string;
}

/** R16: ends a session; its live deliveries go back at once (R12, R13). */
export interface CloseSessionOperation {
  /** The operation's name. */
  readonly type: 'closeSession';
  /** The session's id. */
  readonly session: string;
}

/** R11. */
export interface AckUpToOperation {
  /** The operation's name. */
  readonly type: 'ackUpTo';
  /** The session whose deliveries are acked. */
  readonly session: string;
  /** Every live delivery of the session with a token ≤ this one is acked. */
  readonly token: number;
}

/** R11. */
export interface NackUpToOperation extends NackDisposition {
  /** The operation's name. */
  readonly type: 'nackUpTo';
  /** The session whose deliveries are nacked. */
  readonly session: string;
  /** Every live delivery of the session with a token ≤ this one is nacked. */
  readonly token: number;
}

/** R14: dead jobs back to ready; all when `ids` is undefined. */
export interface RedriveOperation {
  /** The operation's name. */
  readonly type: 'redrive';
  /** The dead jobs to redrive; undefined: all. */
  readonly ids: readonly string[] | undefined;
}

/** Removes dead jobs for good; all when `ids` is undefined. */
export interface PurgeOperation {
  /** The operation's name. */
  readonly type: 'purge';
  /** The dead jobs to remove; undefined: all. */
  readonly ids: readonly string[] | undefined;
}

/** R19: empties the queue: ready, delayed and active jobs, and dead ones when `dead`. */
export interface PurgeQueueOperation {
  /** The operation's name. */
  readonly type: 'purgeQueue';
  /** true: the dead jobs are removed too. */
  readonly dead: boolean;
}

/**
 * R26: ready and delayed jobs (all, or those named) move to `to`, or each to the queue it was
 * dead-lettered from, keeping id, payload and history; at most `max` (undefined: no bound).
 */
export interface MoveJobsOperation {
  /** The operation's name. */
  readonly type: 'moveJobs';
  /** Only these jobs, in this order; undefined: every ready and delayed job. */
  readonly ids: readonly string[] | undefined;
  /** The queue to move to; undefined: each job's origin queue (jobs without one stay). */
  readonly to: string | undefined;
  /** Only jobs whose origin is one of these queues; undefined: any job. */
  readonly origins: readonly string[] | undefined;
  /** At most this many jobs; undefined: no bound. */
  readonly max: number | undefined;
}

/**
 * R28: the job `id` ends, whatever its state but dead: dead with reason `cancelled`, or gone
 * when `remove`. A live delivery of it ends at once (its token is refused from then on).
 */
export interface CancelOperation {
  /** The operation's name. */
  readonly type: 'cancel';
  /** The job to cancel. */
  readonly id: string;
  /** true: the job is removed; false: it dies with reason `cancelled`. */
  readonly remove: boolean;
}

/** R17: gauges and counters; an operation because it advances the clock (R3). */
export interface StatsOperation {
  /** The operation's name. */
  readonly type: 'stats';
}

/** What `purgeQueue` removed, by the state each job was in. */
export interface PurgeQueueResult {
  /** Ready jobs removed. */
  ready: number;
  /** Delayed jobs removed. */
  delayed: number;
  /** Jobs removed with their live delivery (its token is refused afterwards). */
  active: number;
  /** Dead jobs removed (0 unless `dead`). */
  dead: number;
}

/** The answer of each operation type. */
export interface OperationResults {
  /** One result per job, in order. */
  publish: PublishResult[];
  /** The deliveries made, none when nothing is ready. */
  reserve: Delivery[];
  /** Per token, in order: true when it named a live delivery, which is now acked. */
  ack: boolean[];
  /** true when the token named a live delivery, which is now nacked. */
  nack: boolean;
  /** The new deadline, or null for a stale token. */
  extend: number | null;
  /** The new session's id. */
  openSession: string;
  /** Nothing: null. */
  heartbeat: null;
  /** How many live deliveries the session's end released. */
  closeSession: number;
  /** How many deliveries were acked. */
  ackUpTo: number;
  /** How many deliveries were nacked. */
  nackUpTo: number;
  /** How many dead jobs went back to ready. */
  redrive: number;
  /** How many dead jobs were removed. */
  purge: number;
  /** What was removed, by state. */
  purgeQueue: PurgeQueueResult;
  /** How many jobs moved. */
  moveJobs: number;
  /** true when the job was there and not dead, and is now cancelled. */
  cancel: boolean;
  /** The queue's figures. */
  stats: QueueStats;
}

/** The answer of operation `O`. */
export type ResultOf<O extends Operation> = OperationResults[O['type']];

/** One operation's answer within a batch: its value, or the typed error that refused it. */
export type Outcome<T = OperationResults[OperationType]> =
  | {
      /** Done. */
      readonly ok: true;
      /** The operation's answer. */
      readonly value: T;
    }
  | {
      /** Refused: it changed nothing beyond R3. */
      readonly ok: false;
      /** Why, by `code`. */
      readonly error: CodedError<string>;
    };

type Fields = Record<string, unknown>;
type Parser<K extends OperationType> = (
  fields: Fields,
  problems: Problems,
) => Omit<Extract<Operation, { type: K }>, 'type'>;

const PARSERS: { [K in OperationType]: { fields: readonly string[]; parse: Parser<K> } } = {
  publish: { fields: ['jobs'], parse: (f, p) => ({ jobs: publishJobs(f.jobs, 'jobs', p) }) },
  reserve: { fields: ['max', 'visibility', 'session', 'ack'], parse: reserveFields },
  ack: { fields: ['tokens'], parse: (f, p) => ({ tokens: tokenList(f.tokens, p) }) },
  nack: {
    fields: ['token', 'requeue', 'delay', 'reason', 'error', 'attempted'],
    parse: (f, p) => ({ token: token(f.token, p), ...nackFields(f, p) }),
  },
  extend: {
    fields: ['token', 'visibility'],
    parse: (f, p) => {
      p.positiveInteger('token', f.token);
      p.positiveInteger('visibility', f.visibility);
      return { token: f.token as number, visibility: f.visibility as number };
    },
  },
  openSession: { fields: ['prefetch', 'timeout', 'ackTimeout'], parse: sessionFields },
  heartbeat: { fields: ['session'], parse: (f, p) => ({ session: sessionId(f.session, p) }) },
  closeSession: { fields: ['session'], parse: (f, p) => ({ session: sessionId(f.session, p) }) },
  ackUpTo: {
    fields: ['session', 'token'],
    parse: (f, p) => ({ session: sessionId(f.session, p), token: token(f.token, p) }),
  },
  nackUpTo: {
    fields: ['session', 'token', 'requeue', 'delay', 'reason', 'error', 'attempted'],
    parse: (f, p) => ({
      session: sessionId(f.session, p),
      token: token(f.token, p),
      ...nackFields(f, p),
    }),
  },
  redrive: { fields: ['ids'], parse: (f, p) => ({ ids: idList(f.ids, p) }) },
  purge: { fields: ['ids'], parse: (f, p) => ({ ids: idList(f.ids, p) }) },
  purgeQueue: {
    fields: ['dead'],
    parse: (f, p) => {
      const dead = given(f.dead, false);
      p.boolean('dead', dead);
      return { dead: dead as boolean };
    },
  },
  moveJobs: { fields: ['ids', 'to', 'origins', 'max'], parse: moveJobsFields },
  cancel: { fields: ['id', 'remove'], parse: cancelFields },
  stats: { fields: [], parse: () => ({}) },
};

/** Every operation name. */
export const OPERATION_TYPES = Object.freeze(Object.keys(PARSERS) as OperationType[]);

/**
 * Parses one operation from untrusted input (`{ type, ...fields }`): a frozen value with every
 * default filled in, or a ValidationError naming every bad field. Unknown fields are refused.
 */
export function parseOperation(input: unknown): Operation {
  const problems = new Problems();
  if (input === undefined) problems.list.push('operation must be an object, got undefined');
  if (!problems.object('operation', input)) problems.throwIfAny();
  problems.throwIfAny();
  const fields = input as Fields;
  const type = fields.type;
  if (typeof type !== 'string' || !Object.hasOwn(PARSERS, type)) {
    throw new ValidationError(
      `type must be one of ${OPERATION_TYPES.join(', ')}, got ${show(type)}`,
    );
  }
  const spec = PARSERS[type as OperationType];
  unknownFields(fields, (name) => name === 'type' || spec.fields.includes(name), type, problems);
  return finish(
    type as OperationType,
    (spec.parse as Parser<OperationType>)(fields, problems),
    problems,
  );
}

/** Parses a list of operations; every problem of every entry is named by its index. */
export function parseOperations(input: unknown): Operation[] {
  if (!Array.isArray(input)) {
    throw new ValidationError(`operations must be an array, got ${show(input)}`);
  }
  const problems: string[] = [];
  const operations: Operation[] = [];
  entriesOf(input).forEach((entry, index) => {
    try {
      operations.push(parseOperation(entry));
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      for (const issue of error.issues) problems.push(`operations[${index}]: ${issue}`);
    }
  });
  if (problems.length > 0) throw new ValidationError(problems);
  return operations;
}

function finish<K extends OperationType>(
  type: K,
  fields: object,
  problems: Problems,
): Extract<Operation, { type: K }> {
  problems.throwIfAny();
  return parsed(Object.freeze({ type, ...fields }) as Extract<Operation, { type: K }>);
}

/** Operations parseOperation or a builder made: checked, frozen, fully resolved. */
const PARSED = new WeakSet<object>();

function parsed<O extends Operation>(operation: O): O {
  PARSED.add(operation);
  return operation;
}

/**
 * Each operation of a batch as made by `parseOperation` or `build` (passed as it is), or, for a
 * value made some other way (an object literal typed as an Operation), parsed now: the same
 * checks as at every other door, and a ValidationError for that entry alone when it fails.
 * Anything but an array is refused whole.
 */
export function checkedOperations(input: unknown): (Operation | ValidationError)[] {
  if (!Array.isArray(input)) {
    throw new ValidationError(`operations must be an array, got ${show(input)}`);
  }
  return entriesOf(input).map((entry) => {
    if (typeof entry === 'object' && entry !== null && PARSED.has(entry)) return entry as Operation;
    try {
      return parseOperation(entry);
    } catch (error) {
      if (error instanceof ValidationError) return error;
      throw error;
    }
  });
}

/**
 * Builders from the typed arguments of the friendly methods (`queue.ack(token)` …). They check
 * exactly what `parseOperation` checks and give the same errors; only the shape differs.
 */
export const build = {
  /** A publish of one job, from `queue.publish`'s input. */
  publish(input: unknown): PublishOperation {
    const problems = new Problems();
    return finish('publish', { jobs: publishJobs([input], 'job', problems) }, problems);
  },
  /** A publish of a batch of jobs (all-or-nothing, R5), from an array of inputs. */
  publishBatch(inputs: unknown): PublishOperation {
    const problems = new Problems();
    return finish('publish', { jobs: publishJobs(inputs, 'jobs', problems) }, problems);
  },
  /**
   * `alsoRead`: more option names the caller reads itself (a receive's `wait` and `signal`);
   * any other name than these and the reserve's own is refused.
   */
  reserve(options: unknown = {}, alsoRead: ReadonlySet<string> = NO_FIELDS): ReserveOperation {
    const fast = validReserve(options, alsoRead);
    if (fast !== undefined) return fast;
    const problems = new Problems();
    if (!problems.object('options', options)) problems.throwIfAny();
    const fields = (options ?? {}) as Fields;
    unknownFields(
      fields,
      (name) => RESERVE_FIELDS.has(name) || alsoRead.has(name),
      'reserve',
      problems,
    );
    return finish('reserve', reserveFields(fields, problems), problems);
  },
  /** An ack of one token. */
  ack(token: unknown): AckOperation {
    if (isToken(token))
      return parsed(Object.freeze({ type: 'ack', tokens: Object.freeze([token]) }));
    return this.ackMany([token]);
  },
  /** An ack of each of an array of tokens, answered in order. */
  ackMany(tokens: unknown): AckOperation {
    const problems = new Problems();
    return finish('ack', { tokens: tokenList(tokens, problems) }, problems);
  },
  /** A nack (R9) of one token with its options: requeue, delay, reason, error, attempted. */
  nack(tokenValue: unknown, options?: unknown): NackOperation {
    const problems = new Problems();
    const fields = optionsObject(options, problems, 'nack', ['token']);
    return finish(
      'nack',
      { token: token(tokenValue, problems), ...nackFields(fields, problems) },
      problems,
    );
  },
  /** An extension of one delivery's lease to now + visibility (R10). */
  extend(tokenValue: unknown, visibility: unknown): ExtendOperation {
    const problems = new Problems();
    return finish(
      'extend',
      PARSERS.extend.parse({ token: tokenValue, visibility }, problems),
      problems,
    );
  },
  /** A new session with its options: prefetch, timeout, ackTimeout (R16). */
  openSession(options?: unknown): OpenSessionOperation {
    const problems = new Problems();
    return finish(
      'openSession',
      sessionFields(optionsObject(options, problems, 'openSession'), problems),
      problems,
    );
  },
  /** A heartbeat of a session (R16). */
  heartbeat(session: unknown): HeartbeatOperation {
    const problems = new Problems();
    return finish('heartbeat', { session: sessionId(session, problems) }, problems);
  },
  /** The end of a session (R16). */
  closeSession(session: unknown): CloseSessionOperation {
    const problems = new Problems();
    return finish('closeSession', { session: sessionId(session, problems) }, problems);
  },
  /** An ack of a session's live deliveries up to a token (R11). */
  ackUpTo(session: unknown, tokenValue: unknown): AckUpToOperation {
    const problems = new Problems();
    return finish(
      'ackUpTo',
      { session: sessionId(session, problems), token: token(tokenValue, problems) },
      problems,
    );
  },
  /** A nack of a session's live deliveries up to a token (R11), with the nack's options. */
  nackUpTo(session: unknown, tokenValue: unknown, options?: unknown): NackUpToOperation {
    const problems = new Problems();
    const fields = optionsObject(options, problems, 'nackUpTo', ['session', 'token']);
    return finish(
      'nackUpTo',
      {
        session: sessionId(session, problems),
        token: token(tokenValue, problems),
        ...nackFields(fields, problems),
      },
      problems,
    );
  },
  /**
   * R33: deliveries nobody worked on (taken, then not handed on), given back unworked. Each
   * nack puts its job at the front of ready, so the last goes first: the jobs stay in the order
   * they were taken.
   */
  giveBack(tokens: readonly number[]): NackOperation[] {
    return [...tokens].reverse().map((token) => build.nack(token, { attempted: false }));
  },
  /** A redrive of dead jobs, those named or all (R14). */
  redrive(ids?: unknown): RedriveOperation {
    const problems = new Problems();
    return finish('redrive', { ids: idList(ids, problems) }, problems);
  },
  /** A removal of dead jobs, those named or all. */
  purge(ids?: unknown): PurgeOperation {
    const problems = new Problems();
    return finish('purge', { ids: idList(ids, problems) }, problems);
  },
  /** An emptying of the queue, `{ dead }` included or not (R19). */
  purgeQueue(options?: unknown): PurgeQueueOperation {
    const problems = new Problems();
    return finish(
      'purgeQueue',
      PARSERS.purgeQueue.parse(optionsObject(options, problems, 'purgeQueue'), problems),
      problems,
    );
  },
  /** A move of ready and delayed jobs to another queue (R26). */
  moveJobs(options?: unknown): MoveJobsOperation {
    const problems = new Problems();
    const fields = optionsObject(options, problems, 'moveJobs');
    return finish('moveJobs', moveJobsFields(fields, problems), problems);
  },
  /** A cancel of one job, `{ remove }` or not (R28). */
  cancel(id: unknown, options?: unknown): CancelOperation {
    const problems = new Problems();
    return finish(
      'cancel',
      cancelFields({ ...optionsObject(options, problems, 'cancel', ['id']), id }, problems),
      problems,
    );
  },
  /** A read of the queue's figures (R17). */
  stats(): StatsOperation {
    return STATS;
  },
};

const STATS: StatsOperation = parsed(Object.freeze({ type: 'stats' }));
const RESERVE_ONE: ReserveOperation = parsed(
  Object.freeze({
    type: 'reserve',
    max: 1,
    visibility: undefined,
    session: undefined,
    ack: 'manual',
  }),
);

/** The common reserve options, certainly valid, built without collecting problems. */
function validReserve(
  options: unknown,
  alsoRead: ReadonlySet<string>,
): ReserveOperation | undefined {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return undefined;
  for (const name in options) {
    if (!RESERVE_FIELDS.has(name) && !alsoRead.has(name) && Object.hasOwn(options, name)) {
      return undefined;
    }
  }
  const { max, visibility, session, ack } = options as Fields;
  if (ack !== undefined && ack !== 'manual' && ack !== 'auto') return undefined;
  if (
    (max === undefined || max === 1) &&
    visibility === undefined &&
    session === undefined &&
    (ack === undefined || ack === 'manual')
  )
    return RESERVE_ONE;
  if (max !== undefined && !isToken(max)) return undefined;
  if (visibility !== undefined && !isToken(visibility)) return undefined;
  if (session !== undefined && (typeof session !== 'string' || session.length === 0))
    return undefined;
  if (typeof session === 'string' && session.length > 512) return undefined;
  return parsed(
    Object.freeze({
      type: 'reserve',
      max: (max as number | undefined) ?? 1,
      visibility: visibility as number | undefined,
      session: session as string | undefined,
      ack: (ack as AckMode | undefined) ?? 'manual',
    }),
  );
}

// --- field parsers ---------------------------------------------------------------------------

/**
 * The entries of an array from a caller, a hole read as the `undefined` it reads as: every, some,
 * forEach and map skip holes, so a hole would pass every check and reach storage unchecked.
 */
function entriesOf(value: readonly unknown[]): unknown[] {
  return Array.from(value);
}

/**
 * A field's value, or its default when it was left out. Only left out: `null` is a value, and
 * a wrong one where no option takes it (a bug's `requeue: null` must not quietly requeue).
 */
function given(value: unknown, fallback: unknown): unknown {
  return value === undefined ? fallback : value;
}

/**
 * A method's options of operation `type`: an object whose names are fields of that operation,
 * but not those the method takes as arguments (`positional`).
 */
function optionsObject(
  options: unknown,
  problems: Problems,
  type: OperationType,
  positional: readonly string[] = [],
): Fields {
  if (options === undefined) return {};
  if (!problems.object('options', options)) return {};
  const fields = options as Fields;
  const known = PARSERS[type].fields;
  unknownFields(
    fields,
    (name) => known.includes(name) && !positional.includes(name),
    type,
    problems,
  );
  return fields;
}

/** Names no field of `of`: a misspelt option must not fall back to its default unnoticed. */
function unknownFields(
  fields: Fields,
  isKnown: (name: string) => boolean,
  of: string,
  problems: Problems,
): void {
  for (const name of Object.keys(fields)) {
    if (!isKnown(name)) problems.unknown('unknown field', name, of);
  }
}

const NO_FIELDS: ReadonlySet<string> = new Set();
const RESERVE_FIELDS: ReadonlySet<string> = new Set(PARSERS.reserve.fields);
/** What a job of a publish may have (PublishInput). */
const JOB_FIELDS: ReadonlySet<string> = new Set([
  'id',
  'payload',
  'delay',
  'priority',
  'group',
  'expiresAt',
]);

function isToken(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

function token(value: unknown, problems: Problems): number {
  problems.positiveInteger('token', value);
  return value as number;
}

function tokenList(value: unknown, problems: Problems): readonly number[] {
  if (!Array.isArray(value)) {
    problems.list.push(`tokens must be an array, got ${show(value)}`);
    return [];
  }
  const tokens = entriesOf(value);
  if (!tokens.every(isToken)) for (const each of tokens) problems.positiveInteger('token', each);
  return Object.freeze(tokens) as readonly number[];
}

function reserveFields(fields: Fields, problems: Problems) {
  const max = given(fields.max, 1);
  problems.positiveInteger('max', max);
  if (fields.visibility !== undefined) problems.positiveInteger('visibility', fields.visibility);
  if (fields.session !== undefined) sessionId(fields.session, problems);
  const ack = given(fields.ack, 'manual');
  if (ack !== 'manual' && ack !== 'auto') {
    problems.list.push(`ack must be 'manual' or 'auto', got ${show(ack)}`);
  }
  return {
    max: max as number,
    visibility: fields.visibility as number | undefined,
    session: fields.session as string | undefined,
    ack: ack as AckMode,
  };
}

function nackFields(fields: Fields, problems: Problems): NackDisposition {
  const requeue = given(fields.requeue, true);
  const delay = given(fields.delay, 0);
  const reason = given(fields.reason, 'rejected');
  const attempted = given(fields.attempted, true);
  problems.boolean('requeue', requeue);
  problems.nonNegativeInteger('delay', delay);
  problems.reason('reason', reason);
  if (fields.error !== undefined) problems.reason('error', fields.error);
  problems.boolean('attempted', attempted);
  if (attempted === false && requeue === false) {
    problems.list.push(
      'attempted false gives a job back unworked, to ready: it needs requeue true',
    );
  }
  if (attempted === false && fields.error !== undefined) {
    problems.list.push(
      'error describes an attempt, and attempted false records none (R33): leave one of them out',
    );
  }
  if (requeue === false && typeof delay === 'number' && delay > 0) {
    problems.list.push('delay makes a requeued job ready later: it needs requeue true');
  }
  return {
    requeue: requeue as boolean,
    delay: delay as number,
    reason: reason as string,
    error: fields.error as string | undefined,
    attempted: attempted as boolean,
  };
}

function sessionFields(fields: Fields, problems: Problems) {
  const prefetch = fields.prefetch ?? Number.POSITIVE_INFINITY;
  const timeout = fields.timeout ?? Number.POSITIVE_INFINITY;
  const ackTimeout = fields.ackTimeout ?? Number.POSITIVE_INFINITY;
  problems.positiveIntegerOrInfinity('prefetch', prefetch);
  problems.positiveIntegerOrInfinity('timeout', timeout);
  problems.positiveIntegerOrInfinity('ackTimeout', ackTimeout);
  return {
    prefetch: prefetch as number,
    timeout: timeout as number,
    ackTimeout: ackTimeout as number,
  };
}

/**
 * A session names itself by the id its queue issued (`s1` …), or over HTTP by the handle the
 * server gave out; whether it names a session of the queue is state, checked by the queue.
 */
function sessionId(value: unknown, problems: Problems): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 512) {
    problems.list.push(`session must be a session id string, got ${show(value)}`);
  }
  return value as string;
}

function idList(value: unknown, problems: Problems): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    problems.list.push(`ids must be an array, got ${show(value)}`);
    return undefined;
  }
  const ids = entriesOf(value);
  ids.forEach((id, index) => {
    problems.id(`ids[${index}]`, id);
  });
  return Object.freeze(ids) as readonly string[];
}

function cancelFields(fields: Fields, problems: Problems) {
  const remove = given(fields.remove, false);
  problems.id('id', fields.id);
  problems.boolean('remove', remove);
  return { id: fields.id as string, remove: remove as boolean };
}

function moveJobsFields(fields: Fields, problems: Problems) {
  if (fields.to !== undefined) problems.queueName('to', fields.to);
  if (fields.max !== undefined) problems.positiveInteger('max', fields.max);
  return {
    ids: idList(fields.ids, problems),
    to: fields.to as string | undefined,
    origins: queueNameList('origins', fields.origins, problems),
    max: fields.max as number | undefined,
  };
}

function queueNameList(
  name: string,
  value: unknown,
  problems: Problems,
): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    problems.list.push(`${name} must be an array of queue names, got ${show(value)}`);
    return undefined;
  }
  const names = entriesOf(value);
  names.forEach((entry, index) => {
    problems.queueName(`${name}[${index}]`, entry);
  });
  return Object.freeze(names) as readonly string[];
}

/** True when a job is certainly valid: the hot path, allocating nothing. */
function isValidJob(input: unknown): boolean {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return false;
  // Own names only, as unknownFields reads them (for…in also walks the prototype's).
  for (const name in input) if (!JOB_FIELDS.has(name) && Object.hasOwn(input, name)) return false;
  const { id, delay, priority, group, expiresAt } = input as Fields;
  return (
    (expiresAt === undefined || (Number.isSafeInteger(expiresAt) && (expiresAt as number) >= 0)) &&
    (group === undefined ||
      (typeof group === 'string' &&
        group.length > 0 &&
        group.length <= MAX_ID_LENGTH &&
        isStorableText(group))) &&
    (priority === undefined ||
      (Number.isSafeInteger(priority) && (priority as number) >= 0 && (priority as number) <= 9)) &&
    (id === undefined ||
      (typeof id === 'string' &&
        id.length > 0 &&
        id.length <= MAX_ID_LENGTH &&
        isStorableText(id))) &&
    (delay === undefined || (Number.isSafeInteger(delay) && (delay as number) >= 0))
  );
}

function publishJobs(list: unknown, name: string, problems: Problems): readonly PublishJob[] {
  if (!Array.isArray(list)) {
    problems.list.push(`${name} must be an array, got ${show(list)}`);
    return [];
  }
  // By index: a hole reads as undefined, which no job is (every would pass over it).
  if (!everyValidJob(list)) {
    entriesOf(list).forEach((input, index) => {
      const at = name === 'job' ? 'job' : `${name}[${index}]`;
      if (input === undefined) problems.list.push(`${at} must be an object, got undefined`);
      if (!problems.object(at, input) || input === undefined) return;
      const job = input as Fields;
      unknownFields(job, (field) => JOB_FIELDS.has(field), at, problems);
      if (job.id !== undefined) problems.id(`${at}.id`, job.id);
      if (job.delay !== undefined) problems.nonNegativeInteger(`${at}.delay`, job.delay);
      if (job.priority !== undefined) problems.priority(`${at}.priority`, job.priority);
      if (job.group !== undefined) problems.id(`${at}.group`, job.group);
      if (job.expiresAt !== undefined) {
        problems.nonNegativeInteger(`${at}.expiresAt`, job.expiresAt);
      }
    });
    return [];
  }
  // The array is frozen, each job readonly by type only: a freeze per job made a publish of
  // many jobs to the memory engine cost about 5% more.
  return Object.freeze(
    (list as Fields[]).map(
      (input): PublishJob => ({
        id: input.id as string | undefined,
        payload: input.payload,
        delay: (input.delay as number | undefined) ?? 0,
        priority: (input.priority as number | undefined) ?? 0,
        group: input.group as string | undefined,
        expiresAt: input.expiresAt as number | undefined,
      }),
    ),
  );
}

/** Whether every entry, holes included, is a valid job: the hot path, allocating nothing. */
function everyValidJob(list: readonly unknown[]): boolean {
  for (let index = 0; index < list.length; index++) if (!isValidJob(list[index])) return false;
  return true;
}

/** Whether an operation may make jobs ready (receivers elsewhere should look again). */
export function makesJobsReady(operation: Operation): boolean {
  switch (operation.type) {
    case 'publish':
    case 'nack':
    case 'closeSession':
    case 'nackUpTo':
    case 'redrive':
      return true;
    default:
      return false;
  }
}

/** The session an operation names, if any. */
export function sessionOf(operation: Operation): string | undefined {
  switch (operation.type) {
    case 'reserve':
    case 'heartbeat':
    case 'closeSession':
    case 'ackUpTo':
    case 'nackUpTo':
      return operation.session;
    default:
      return undefined;
  }
}

/**
 * Whether an operation may let a receiver parked in this process go on sooner: it frees
 * prefetch room (ack), or moves a lease deadline (extend), the next event a receiver sleeps to.
 */
export function reschedulesReceivers(operation: Operation): boolean {
  switch (operation.type) {
    case 'ack':
    case 'ackUpTo':
    case 'purgeQueue':
    case 'extend':
    case 'cancel':
      return true;
    default:
      return false;
  }
}
