import type { FastifyBaseLogger } from 'fastify';
import type { Queue } from '../../broker/index.js';
import { build, type Delivery, type NackOptions } from '../../core/index.js';
import { deliveryToWire } from '../../wire/index.js';
import { type ErrorBody, mapError, ServerError } from '../errors.js';
import { checkQueueVisibility } from '../limits.js';
import { nackFate, type QueueLookup } from '../operation-runner.js';
import type { ReceiptClaim } from '../receipts.js';
import { type RouteSpec, route, type Services } from '../route.js';
import { arrayOf, errorBody, type JsonSchema, object, queueParams } from '../schemas.js';

const TAG = 'deliveries';

interface ReceiveBody {
  max?: number;
  visibility?: number;
  wait?: number;
  session?: string;
  ack?: 'manual' | 'auto';
}

interface NackEntry extends NackOptions {
  receipt: string;
}

interface ExtendEntry {
  receipt: string;
  visibility: number;
}

/** One entry of a batch: its result, or the error that entry alone met. */
type EntryResult<T> = T | ErrorBody;

export function deliveryRoutes(services: Services): RouteSpec[] {
  const { queues, schemas, receipts, longPolls, limits } = services;
  const entryError = (errorBody.properties as { error: JsonSchema }).error;
  /** Every receipt's claim; the first one not issued for `queue` refuses them all, by its index. */
  const verifyAll = (queue: string, list: readonly string[]) =>
    list.map((receipt, index) => {
      try {
        return receipts.verify(queue, receipt);
      } catch (error) {
        if (!(error instanceof ServerError)) throw error;
        throw new ServerError(
          error.code,
          `receipts[${index}]: ${error.message}; no receipt of the batch was acked`,
        );
      }
    });

  return [
    route<ReceiveBody>({
      method: 'POST',
      url: '/v1/queues/:name/receive',
      summary:
        'Reserve up to `max` jobs; with `wait` (ms) answer as soon as one is ready, or empty when the wait ends',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.receive,
      response: object({ deliveries: arrayOf(schemas.delivery) }, ['deliveries']),
      async handle({ params, body, signal, clientGone, log }) {
        const queue = await queues.existing(params.name);
        // R22: a job received at most once has no lease, so the queue's is not held to the limit.
        if (body.visibility === undefined && body.ack !== 'auto') {
          await checkQueueVisibility(queue, limits);
        }
        const { session, wait = 0, ...reserve } = body;
        const signer = receipts.forQueue(queue.name);
        const sessionId =
          session === undefined ? undefined : receipts.verifySession(queue.name, session);
        const leave = wait > 0 ? longPolls.enter() : undefined;
        let deliveries: Delivery[];
        try {
          deliveries = await queue.receive({ ...reserve, wait, session: sessionId, signal });
        } finally {
          leave?.();
        }
        if (clientGone()) {
          // Auto-acked jobs were removed as they were taken (R22): there is nothing to give back.
          if (body.ack === 'auto') logLost(log, queue, deliveries);
          else await releaseUnsent(queue, deliveries, log);
          return { deliveries: [] };
        }
        for (const delivery of deliveries) {
          log.info(
            {
              queue: queue.name,
              jobId: delivery.id,
              token: delivery.token,
              deliveryCount: delivery.deliveryCount,
            },
            'delivered',
          );
        }
        return {
          deliveries: deliveries.map((delivery) => deliveryToWire(delivery, signer)),
        };
      },
    }),
    route<{ receipt: string }>({
      method: 'POST',
      url: '/v1/queues/:name/ack',
      summary:
        'Complete a delivery (R8): acked is false, and nothing changes, when it is no longer live',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.ack,
      response: object({ acked: { type: 'boolean' } }, ['acked']),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        const claim = receipts.verify(queue.name, body.receipt);
        const acked = await queue.ack(claim.token);
        logOutcome(log, queue, claim, acked ? 'acked' : 'stale ack');
        return { acked };
      },
    }),
    route<{ receipts: string[] }>({
      method: 'POST',
      url: '/v1/queues/:name/ack/batch',
      summary:
        'Ack a batch of deliveries; any receipt not issued for this queue refuses the whole batch, naming its index',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.ackBatch,
      response: object({ results: arrayOf(object({ acked: { type: 'boolean' } }, ['acked'])) }, [
        'results',
      ]),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        const claims = verifyAll(queue.name, body.receipts);
        const acked = await queue.ackMany(claims.map((claim) => claim.token));
        claims.forEach((claim, index) => {
          logOutcome(log, queue, claim, acked[index] ? 'acked' : 'stale ack');
        });
        return { results: acked.map((value) => ({ acked: value })) };
      },
    }),
    route<NackEntry>({
      method: 'POST',
      url: '/v1/queues/:name/nack',
      summary:
        'Give a delivery back (R9): requeue (front of ready, or after `delay` ms) or, with requeue false, dead-letter it',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.nack,
      response: object({ nacked: { type: 'boolean' } }, ['nacked']),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        checkNackOptions(body);
        const claim = receipts.verify(queue.name, body.receipt);
        return { nacked: await nackOne(queue, queues, claim, body, log) };
      },
    }),
    route<{ entries: NackEntry[] }>({
      method: 'POST',
      url: '/v1/queues/:name/nack/batch',
      summary: 'Nack a batch of deliveries, each with its own options; a result or error per entry',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.nackBatch,
      response: object(
        { results: arrayOf(object({ nacked: { type: 'boolean' }, error: entryError })) },
        ['results'],
      ),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        const results: EntryResult<{ nacked: boolean }>[] = [];
        // A receipt not issued for this queue is its entry's error alone.
        for (const entry of body.entries) {
          results.push(
            await perEntry(log, async () => {
              checkNackOptions(entry);
              const claim = receipts.verify(queue.name, entry.receipt);
              return { nacked: await nackOne(queue, queues, claim, entry, log) };
            }),
          );
        }
        return { results };
      },
    }),
    route<ExtendEntry>({
      method: 'POST',
      url: '/v1/queues/:name/extend',
      summary:
        'Move a live delivery deadline to now + visibility, capped by maxLease (R10); null when no longer live',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.extend,
      response: object({ deadline: { type: ['integer', 'null'] } }, ['deadline']),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        const claim = receipts.verify(queue.name, body.receipt);
        return { deadline: await extendOne(queue, claim, body.visibility, log) };
      },
    }),
    route<{ entries: ExtendEntry[] }>({
      method: 'POST',
      url: '/v1/queues/:name/extend/batch',
      summary: 'Extend a batch of deliveries; a result or error per entry',
      tag: TAG,
      access: 'consume',
      params: queueParams,
      body: schemas.extendBatch,
      response: object(
        {
          results: arrayOf(
            object({ deadline: { type: ['integer', 'null'], minimum: 0 }, error: entryError }),
          ),
        },
        ['results'],
      ),
      async handle({ params, body, log }) {
        const queue = await queues.existing(params.name);
        const results: EntryResult<{ deadline: number | null }>[] = [];
        // A receipt not issued for this queue is its entry's error alone.
        for (const entry of body.entries) {
          results.push(
            await perEntry(log, async () => {
              const claim = receipts.verify(queue.name, entry.receipt);
              return { deadline: await extendOne(queue, claim, entry.visibility, log) };
            }),
          );
        }
        return { results };
      },
    }),
  ];
}

/**
 * A nack's options checked before its receipt is read, as an operation's fields are: a reason
 * the schema cannot refuse (U+0000, a lone surrogate, over 1024 UTF-16 code units, R18) is
 * INVALID_ARGUMENT whatever the receipt, at every door.
 */
function checkNackOptions({ requeue, delay, reason, error, attempted }: NackOptions): void {
  build.nack(1, { requeue, delay, reason, error, attempted });
}

async function nackOne(
  queue: Queue,
  queues: QueueLookup,
  claim: ReceiptClaim,
  options: NackOptions,
  log: FastifyBaseLogger,
): Promise<boolean> {
  const { requeue, delay, reason, error, attempted } = options;
  const nacked = await queue.nack(claim.token, { requeue, delay, reason, error, attempted });
  const fate = await nackFate(log, queue, queues, { ...options, ...claim }, nacked);
  logOutcome(log, queue, claim, fate.msg, fate.fields);
  return nacked;
}

async function extendOne(
  queue: Queue,
  claim: ReceiptClaim,
  visibility: number,
  log: FastifyBaseLogger,
): Promise<number | null> {
  const deadline = await queue.extend(claim.token, visibility);
  logOutcome(log, queue, claim, deadline === null ? 'stale extend' : 'extended', { deadline });
  return deadline;
}

/** A receive whose client went away: its jobs go back at once, unworked, not at lease end. */
async function releaseUnsent(queue: Queue, deliveries: Delivery[], log: FastifyBaseLogger) {
  const outcomes = await queue.execute(
    build.giveBack(deliveries.map((delivery) => delivery.token)),
  );
  // In the order of the operations: the last delivery first.
  [...deliveries].reverse().forEach((delivery, index) => {
    const released = outcomes[index]?.ok === true && outcomes[index].value === true;
    logOutcome(log, queue, delivery, released ? 'released, client gone' : 'stale release');
  });
}

/**
 * An auto-ack receive whose client went away: its jobs were removed as they were taken, at most
 * once (R22), and cannot be put back. Each is logged, so that the loss is seen.
 */
function logLost(log: FastifyBaseLogger, queue: Queue, deliveries: readonly Delivery[]): void {
  for (const delivery of deliveries) {
    log.warn(
      { queue: queue.name, jobId: delivery.id, token: delivery.token },
      'auto-acked job lost: its client went away before the answer (at most once, R22)',
    );
  }
}

async function perEntry<T>(log: FastifyBaseLogger, run: () => Promise<T>): Promise<EntryResult<T>> {
  try {
    return await run();
  } catch (error) {
    const mapped = mapError(error);
    if (mapped.internal) log.error({ err: error }, 'batch entry failed');
    return mapped.body;
  }
}

/** Every delivery outcome is logged with the job id and the token (R17). */
function logOutcome(
  log: FastifyBaseLogger,
  queue: Queue,
  delivery: { id: string; token: number },
  outcome: string,
  extra: Record<string, unknown> = {},
): void {
  log.info({ queue: queue.name, jobId: delivery.id, token: delivery.token, ...extra }, outcome);
}
