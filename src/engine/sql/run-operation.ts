import type { Operation, OperationResults, OperationType } from '../../core/index.js';
import { encodeJobs } from '../../core/index.js';
import type { EncodedPublish, QueueOps } from './queue-ops.js';

/**
 * What of an operation depends on its arguments alone, worked out as it is called rather than
 * in its transaction, which holds the queue meanwhile: a publish's payloads as JSON text (the
 * copy the queue keeps, as the payloads were when the call was made), or the error that refuses
 * one. Undefined for other operations.
 */
export type Prepared = { jobs: EncodedPublish[] } | { error: unknown } | undefined;

export function prepareOperation(operation: Operation): Prepared {
  if (operation.type !== 'publish') return undefined;
  try {
    return {
      jobs: encodeJobs(operation.jobs).map((job) => ({
        id: job.id,
        payloadJson: job.payload as string | null,
        delay: job.delay,
        priority: job.priority,
        group: job.group,
        expiresAt: job.expiresAt,
      })),
    };
  } catch (error) {
    return { error };
  }
}

/**
 * One parsed operation over SQL rows, inside the caller's transaction. `prepared`: what
 * `prepareOperation` made of it when it was called.
 */
export async function runOperation(
  ops: QueueOps,
  now: number,
  operation: Operation,
  prepared: Prepared,
): Promise<OperationResults[OperationType]> {
  switch (operation.type) {
    case 'publish': {
      // The clock before the payloads (R2): a batch at a refused now is refused whole (R20).
      ops.checkClock(now);
      if (prepared === undefined) throw new Error('a publish was run without prepareOperation');
      if ('error' in prepared) throw prepared.error;
      return ops.publish(now, prepared.jobs);
    }
    case 'reserve':
      return ops.reserve(now, operation);
    case 'ack':
      return ops.ack(now, operation.tokens);
    case 'nack':
      return ops.nack(now, operation.token, operation);
    case 'extend':
      return ops.extend(now, operation.token, operation.visibility);
    case 'openSession':
      return ops.openSessionAt(now, operation);
    case 'heartbeat':
      await ops.heartbeat(now, operation.session);
      return null;
    case 'closeSession':
      return ops.closeSession(now, operation.session);
    case 'ackUpTo':
      return ops.ackRows(now, await ops.upTo(now, operation.session, operation.token));
    case 'nackUpTo': {
      const rows = await ops.upTo(now, operation.session, operation.token);
      // At the time upTo advanced the clock to: a `now` behind it ('follow') runs at the queue's.
      return ops.settleNacks(rows, ops.q.queueTime, operation);
    }
    case 'redrive':
      return ops.redrive(now, operation.ids);
    case 'purge':
      return ops.purge(now, operation.ids);
    case 'purgeQueue':
      return ops.purgeQueue(now, operation.dead);
    case 'moveJobs':
      return ops.moveJobs(now, operation);
    case 'cancel':
      return ops.cancel(now, operation.id, operation.remove);
    case 'stats':
      return ops.stats(now);
  }
}
