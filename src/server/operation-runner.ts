import type { FastifyBaseLogger } from 'fastify';
import type { Queue } from '../broker/index.js';
import {
  type JobView,
  type NackOptions,
  NotFoundError,
  type Operation,
  type OperationType,
  type Outcome,
  ValidationError,
} from '../core/index.js';
import { operationFromWire, outcomeToWire, type WireOutcome } from '../wire/index.js';
import { type Action, authorize, authorizeMoveToOrigins, type Principal } from './auth.js';
import { mapError } from './errors.js';
import { checkPayloadSize, checkQueueVisibility, type Limits } from './limits.js';
import type { Receipts } from './receipts.js';

/** The right each operation needs on its queue (`read`: any right at all). */
const ACCESS: Readonly<Record<OperationType, Action>> = {
  publish: 'publish',
  reserve: 'consume',
  ack: 'consume',
  nack: 'consume',
  extend: 'consume',
  openSession: 'consume',
  heartbeat: 'consume',
  closeSession: 'consume',
  ackUpTo: 'consume',
  nackUpTo: 'consume',
  redrive: 'admin',
  purge: 'admin',
  purgeQueue: 'admin',
  moveJobs: 'admin',
  cancel: 'admin',
  stats: 'read',
};

/** One operation that ran, with its answer: what a door may need beyond the wire outcome. */
export interface RanOperation {
  operation: Operation;
  outcome: Outcome;
}

/**
 * Runs a batch of wire operations on one queue, the way every door does (the HTTP batch route,
 * the stream): each is parsed, authorized and checked against the server's limits on its own;
 * those that pass run as one unit of the storage (shared with other callers' batches); the
 * answers come back in order, refused ones as typed errors that changed nothing.
 */
export async function runOperations(
  context: {
    queue: Queue;
    principal: Principal;
    receipts: Receipts;
    limits: Limits;
    log: FastifyBaseLogger;
    /** Looks up another queue: where a nacked job may have moved to (its dead-letter queue). */
    queues: QueueLookup;
    /**
     * Resolves when the operations may be handed to the queue: a stream connection's frames
     * hand theirs in the order they came, whatever their checks awaited.
     */
    turn?: Promise<void>;
  },
  inputs: readonly unknown[],
  observe?: (ran: RanOperation) => void,
  /**
   * Called with the operations that passed, right after they were handed to the queue and
   * before they ran: what the caller submits to the queue here joins their storage unit.
   */
  submitted?: (operations: readonly Operation[]) => void,
): Promise<WireOutcome[]> {
  const { queue, principal, receipts, limits, log, queues } = context;
  const wire = receipts.forQueue(queue.name);
  const jobIds = new Map<number, string>();
  const verifier = {
    token: (receipt: string) => {
      const claim = receipts.verify(queue.name, receipt);
      jobIds.set(claim.token, claim.id);
      return claim.token;
    },
    sessionId: wire.sessionId,
  };
  const results: WireOutcome[] = new Array(inputs.length);
  let parsed: { index: number; operation: Operation }[] = [];
  inputs.forEach((input, index) => {
    try {
      // The right first, as the single routes check it: a key without it is refused whatever
      // its receipts or session handles, which it would otherwise learn to be genuine or not.
      authorizeType(principal, input, queue.name);
      // Receipts and session handles are refused only once the rest has passed, as on the
      // single routes: the same bad input gets the same refusal at every door.
      const operation = operationFromWire(input, verifier, (checked) => {
        authorizeDestination(principal, checked);
        checkLimits(checked, limits, `operations[${index}]`);
      });
      parsed.push({ index, operation });
    } catch (error) {
      results[index] = refused(error, log);
    }
  });
  // A reserve naming no visibility takes the queue's lease, held to the same limit (one read).
  if (parsed.some(({ operation }) => defaultLease(operation))) {
    try {
      await checkQueueVisibility(queue, limits);
    } catch (error) {
      for (const { index, operation } of parsed) {
        if (defaultLease(operation)) results[index] = refused(error, log);
      }
      parsed = parsed.filter(({ operation }) => !defaultLease(operation));
    }
  }
  const operations = parsed.map((entry) => entry.operation);
  if (context.turn !== undefined) await context.turn;
  const running = operations.length === 0 ? undefined : queue.execute(operations);
  if (running !== undefined) submitted?.(operations);
  const outcomes = running === undefined ? [] : await running;
  // What each live nack that asked for a requeue did, read before any line is written so that
  // the lines keep the order of the operations.
  const fates = await Promise.all(
    parsed.map(({ operation }, k) => {
      const outcome = outcomes[k] as Outcome;
      if (operation.type !== 'nack' || !outcome.ok) return undefined;
      const jobId = jobIds.get(operation.token);
      if (jobId === undefined) return undefined;
      return nackFate(log, queue, queues, { ...operation, id: jobId }, outcome.value as boolean);
    }),
  );
  parsed.forEach(({ index, operation }, k) => {
    const outcome = outcomes[k] as Outcome;
    logOutcome(log, queue.name, operation, outcome, jobIds, fates[k]);
    observe?.({ operation, outcome });
    results[index] = outcome.ok
      ? outcomeToWire(operation, outcome, wire)
      : refused(outcome.error, log);
  });
  return results;
}

/** A reserve that takes its queue's lease: one naming no visibility, and not received at most once (R22: no lease). */
function defaultLease(operation: Operation): boolean {
  return (
    operation.type === 'reserve' && operation.visibility === undefined && operation.ack !== 'auto'
  );
}

/** Refuses an operation of a known `type` that the key may not do, before the rest is read. */
function authorizeType(principal: Principal, input: unknown, queue: string): void {
  if (typeof input !== 'object' || input === null) return;
  const type = (input as { type?: unknown }).type;
  if (typeof type === 'string' && Object.hasOwn(ACCESS, type)) {
    authorize(principal, ACCESS[type as OperationType], queue);
  }
}

/**
 * Beyond the right on the queue (authorizeType, checked before the operation was read): jobs
 * moved are published where they go, which needs the right to publish there.
 */
function authorizeDestination(principal: Principal, operation: Operation): void {
  if (operation.type === 'moveJobs') {
    if (operation.to !== undefined) authorize(principal, 'publish', operation.to);
    else authorizeMoveToOrigins(principal, operation.origins);
  }
}

/**
 * The server's own bounds (see Limits), which the core does not know. `where` names the
 * operation in its batch, so that a payload over the limit is named as the publish routes name it.
 */
function checkLimits(operation: Operation, limits: Limits, where: string): void {
  const problems: string[] = [];
  const visibility = (name: string, value: number | undefined) => {
    if (value !== undefined && value > limits.maxVisibilityMs) {
      problems.push(
        `${name} must be at most ${limits.maxVisibilityMs} ms, got ${value} (this server's maxVisibilityMs)`,
      );
    }
  };
  const delay = (name: string, value: number) => {
    if (value > limits.maxDelayMs) {
      problems.push(
        `${name} must be at most ${limits.maxDelayMs} ms, got ${value} (this server's maxDelayMs)`,
      );
    }
  };
  const count = (name: string, length: number) => {
    if (length > limits.maxBatch) {
      problems.push(
        `${name} must have at most ${limits.maxBatch} entries, got ${length} (this server's maxBatch: send more as several calls, or raise it)`,
      );
    }
  };
  switch (operation.type) {
    case 'publish':
      count('jobs', operation.jobs.length);
      for (const [index, job] of operation.jobs.entries()) delay(`jobs[${index}].delay`, job.delay);
      break;
    case 'reserve':
      visibility('visibility', operation.visibility);
      if (operation.max > limits.maxBatch) {
        problems.push(
          `max must be at most ${limits.maxBatch}, got ${operation.max} (this server's maxBatch)`,
        );
      }
      break;
    case 'extend':
      visibility('visibility', operation.visibility);
      break;
    case 'ack':
      count('receipts', operation.tokens.length);
      break;
    case 'nack':
    case 'nackUpTo':
      delay('delay', operation.delay);
      break;
    case 'redrive':
    case 'purge':
      count('ids', operation.ids?.length ?? 0);
      break;
    case 'moveJobs':
      count('ids', operation.ids?.length ?? 0);
      count('origins', operation.origins?.length ?? 0);
      break;
  }
  if (problems.length > 0) throw new ValidationError(problems);
  // After the bounds above, as on the publish routes, where the schema refuses those first.
  if (operation.type === 'publish') {
    for (const [index, job] of operation.jobs.entries()) {
      checkPayloadSize(job.payload, limits.maxPayloadBytes, `${where}.jobs[${index}].payload`);
    }
  }
}

/** The typed error an operation or frame was refused with; server failures are logged. */
export function refused(error: unknown, log: FastifyBaseLogger): WireOutcome & { ok: false } {
  const mapped = mapError(error);
  if (mapped.internal) log.error({ err: error }, 'operation refused');
  return { ok: false, error: mapped.body.error };
}

/**
 * Settlements are logged with the job id and the token (R17), and sessions' openings, closes
 * and settlements with the session, as the single routes do.
 */
function logOutcome(
  log: FastifyBaseLogger,
  queue: string,
  operation: Operation,
  outcome: Outcome,
  jobIds: ReadonlyMap<number, string>,
  fate: NackFate | undefined,
): void {
  if (!outcome.ok) return;
  const line = (token: number, what: string) =>
    log.info({ queue, jobId: jobIds.get(token), token }, what);
  switch (operation.type) {
    case 'reserve':
      for (const delivery of outcome.value as { id: string; token: number }[]) {
        log.info({ queue, jobId: delivery.id, token: delivery.token }, 'delivered');
      }
      break;
    case 'ack':
      operation.tokens.forEach((token, index) => {
        line(token, (outcome.value as boolean[])[index] ? 'acked' : 'stale ack');
      });
      break;
    case 'nack':
      if (fate === undefined) line(operation.token, 'stale nack');
      else {
        log.info(
          { queue, jobId: jobIds.get(operation.token), token: operation.token, ...fate.fields },
          fate.msg,
        );
      }
      break;
    case 'extend':
      line(operation.token, outcome.value === null ? 'stale extend' : 'extended');
      break;
    // Sessions settle and release jobs too: logged as the session routes log them.
    case 'openSession':
      log.info({ queue, session: outcome.value }, 'session opened');
      break;
    case 'closeSession':
      log.info({ queue, session: operation.session, released: outcome.value }, 'session closed');
      break;
    case 'ackUpTo':
      log.info(
        { queue, session: operation.session, upToToken: operation.token, acked: outcome.value },
        'acked up to',
      );
      break;
    case 'nackUpTo':
      log.info(
        {
          queue,
          session: operation.session,
          upToToken: operation.token,
          nacked: outcome.value,
          requeue: operation.requeue,
        },
        'nacked up to',
      );
      break;
  }
}

/** Finds a queue by name, failing with NOT_FOUND (the server's QueueDirectory). */
export interface QueueLookup {
  existing(name: string): Promise<Queue>;
}

/** How a nack ended, for its log line: the message and what the line carries besides. */
export interface NackFate {
  msg: string;
  fields: Record<string, unknown>;
}

/**
 * How a nack ended (options as given: absent ones have their defaults). A live nack that asked
 * for a requeue dead-letters its job instead when that delivery was its last (R13), and its
 * answer does not say which: then the job is read after it, in this queue or, moved on (R26),
 * in its dead-letter queue. That read is made only when the line will be written (info). The
 * nack has committed by then: a read that fails (the queue deleted meanwhile) leaves the line
 * without what it would have found, and the nack's answer as it is.
 */
export async function nackFate(
  log: FastifyBaseLogger,
  queue: Queue,
  queues: QueueLookup,
  nack: Pick<NackOptions, 'requeue' | 'attempted' | 'reason'> & { id: string; token: number },
  live: boolean,
): Promise<NackFate> {
  try {
    return await readNackFate(log, queue, queues, nack, live);
  } catch (error) {
    log.warn({ err: error, queue: queue.name, jobId: nack.id }, 'nack outcome not read');
    return nack.requeue === false
      ? { msg: 'dead-lettered', fields: { reason: nack.reason ?? 'rejected' } }
      : { msg: 'nacked', fields: {} };
  }
}

async function readNackFate(
  log: FastifyBaseLogger,
  queue: Queue,
  queues: QueueLookup,
  nack: Pick<NackOptions, 'requeue' | 'attempted' | 'reason'> & { id: string; token: number },
  live: boolean,
): Promise<NackFate> {
  if (!live) return { msg: 'stale nack', fields: {} };
  const logged = INFO_LOGGED.has(log.level);
  if (nack.requeue === false) {
    const reason = nack.reason ?? 'rejected';
    // Where it went, as for a last delivery's requeue: its dead-letter queue, or its own dead set.
    // (A job of that id already there is another: this one stayed, R26.)
    const moved = logged ? await movedOn(queue, queues, nack) : undefined;
    const there = moved?.job.history.at(-1)?.token === nack.token;
    return {
      msg: 'dead-lettered',
      fields: { reason, ...(there ? { deadLetterQueue: moved?.to } : {}) },
    };
  }
  // One given back unworked records no delivery, so it is never a job's last (R33).
  if (nack.attempted === false) return { msg: 'given back unworked', fields: {} };
  if (!logged) return { msg: 'requeued', fields: {} };
  const here = await queue.job(nack.id);
  if (here !== undefined) {
    return diedOfThisNack(here, nack.token, here.reason)
      ? { msg: 'dead-lettered', fields: { reason: here.reason } }
      : { msg: 'requeued', fields: {} };
  }
  const moved = await movedOn(queue, queues, nack);
  if (moved !== undefined && diedOfThisNack(moved.job, nack.token, moved.reason)) {
    return { msg: 'dead-lettered', fields: { reason: moved.reason, deadLetterQueue: moved.to } };
  }
  return { msg: 'requeued', fields: {} };
}

/**
 * The job in its queue's dead-letter queue, moved there from this queue (R26), or undefined
 * (still here, in its own dead set where that queue is gone, or moved on since).
 */
async function movedOn(
  queue: Queue,
  queues: QueueLookup,
  nack: { id: string },
): Promise<{ to: string; job: JobView; reason: string } | undefined> {
  const to = (await queue.options()).deadLetterQueue;
  const job = to === undefined ? undefined : await jobIn(queues, to, nack.id);
  if (to === undefined || job?.origin?.queue !== queue.name) return undefined;
  return { to, job, reason: job.origin.reason };
}

/** The levels at which info lines are written. */
const INFO_LOGGED: ReadonlySet<string> = new Set(['trace', 'debug', 'info']);

/**
 * The job died of max-deliveries at the end of the delivery `token`, its last attempt: one that
 * was requeued and died later (cancelled, expired, or after a later delivery) did not.
 */
function diedOfThisNack(job: JobView, token: number, reason: string | undefined): boolean {
  const last = job.history.at(-1);
  return reason === 'max-deliveries' && last?.token === token;
}

async function jobIn(queues: QueueLookup, name: string, id: string): Promise<JobView | undefined> {
  try {
    return await (await queues.existing(name)).job(id);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}
