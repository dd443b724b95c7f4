import type { FastifyBaseLogger } from 'fastify';
import {
  type Operation,
  type OperationType,
  type Outcome,
  ValidationError,
} from '../../core/index.js';
import { operationFromWire, outcomeToWire, type WireOutcome } from '../../wire/index.js';
import { type Action, authorize, type Principal } from '../auth.js';
import { mapError } from '../errors.js';
import type { Limits } from '../limits.js';
import { type RouteSpec, route, type Services } from '../route.js';
import { arrayOf, errorBody, type JsonSchema, object, queueParams } from '../schemas.js';

/** The right each operation needs on its queue (`see`: any right at all). */
const ACCESS: Readonly<Record<OperationType, Action | 'see'>> = {
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
  stats: 'see',
};

/**
 * Many operations of one queue in one request: each is parsed (the same parse as every other
 * door), authorized and answered on its own, in order; those that parse run as one unit of the
 * storage (one transaction, shared with other requests' operations).
 */
export function operationRoutes(services: Services): RouteSpec[] {
  const { queues, schemas, receipts, limits } = services;
  const entryError = (errorBody.properties as { error: JsonSchema }).error;
  return [
    route<{ operations: unknown[] }>({
      method: 'POST',
      url: '/v1/queues/:name/operations',
      summary:
        'Run a batch of operations on one queue, answered in order; one refused operation does not fail the others',
      tag: 'operations',
      access: 'authenticated',
      params: queueParams,
      body: schemas.operations,
      response: object(
        {
          results: arrayOf(
            object({ ok: { type: 'boolean' }, value: {}, error: entryError }, ['ok']),
          ),
        },
        ['results'],
      ),
      async handle({ params, body, principal, log }) {
        const queue = await queues.existing(params.name);
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
        const results: WireOutcome[] = new Array(body.operations.length);
        const parsed: { index: number; operation: Operation }[] = [];
        body.operations.forEach((input, index) => {
          try {
            const operation = operationFromWire(input, verifier);
            authorizeOperation(principal, operation, queue.name);
            checkLimits(operation, limits);
            parsed.push({ index, operation });
          } catch (error) {
            results[index] = refused(error, log);
          }
        });
        const outcomes =
          parsed.length === 0 ? [] : await queue.execute(parsed.map((entry) => entry.operation));
        parsed.forEach(({ index, operation }, k) => {
          const outcome = outcomes[k] as Outcome;
          logOutcome(log, queue.name, operation, outcome, jobIds);
          results[index] = outcome.ok
            ? outcomeToWire(operation, outcome, wire)
            : refused(outcome.error, log);
        });
        return { results };
      },
    }),
  ];
}

function authorizeOperation(principal: Principal, operation: Operation, queue: string): void {
  const needed = ACCESS[operation.type];
  if (needed === 'see') {
    if (!principal.canSee(queue)) authorize(principal, 'consume', queue);
    return;
  }
  authorize(principal, needed, queue);
}

/** The server's own bounds (see Limits), which the core does not know. */
function checkLimits(operation: Operation, limits: Limits): void {
  const problems: string[] = [];
  const visibility = (name: string, value: number | undefined) => {
    if (value !== undefined && value > limits.maxVisibilityMs) {
      problems.push(`${name} must be at most ${limits.maxVisibilityMs} ms, got ${value}`);
    }
  };
  const delay = (name: string, value: number) => {
    if (value > limits.maxDelayMs) {
      problems.push(`${name} must be at most ${limits.maxDelayMs} ms, got ${value}`);
    }
  };
  const count = (name: string, length: number) => {
    if (length > limits.maxBatch) {
      problems.push(`${name} must have at most ${limits.maxBatch} entries, got ${length}`);
    }
  };
  switch (operation.type) {
    case 'publish':
      count('jobs', operation.jobs.length);
      for (const [index, job] of operation.jobs.entries()) delay(`jobs[${index}].delay`, job.delay);
      break;
    case 'reserve':
      visibility('visibility', operation.visibility);
      count('max', operation.max);
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
  }
  if (problems.length > 0) throw new ValidationError(problems);
}

function refused(error: unknown, log: FastifyBaseLogger): WireOutcome {
  const mapped = mapError(error);
  if (mapped.internal) log.error({ err: error }, 'operation refused');
  return { ok: false, error: mapped.body.error };
}

/** Settlements are logged with the job id and the token (R17), as the single routes do. */
function logOutcome(
  log: FastifyBaseLogger,
  queue: string,
  operation: Operation,
  outcome: Outcome,
  jobIds: ReadonlyMap<number, string>,
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
      line(
        operation.token,
        !outcome.value ? 'stale nack' : operation.requeue ? 'requeued' : 'dead-lettered',
      );
      break;
    case 'extend':
      line(operation.token, outcome.value === null ? 'stale extend' : 'extended');
      break;
  }
}
