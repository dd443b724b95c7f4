import type { ServedWake } from '../engine.js';
import type { WakeHub } from '../wake-hub.js';
import type { BatchContext } from './executor.js';
import type { Handoffs } from './handoffs.js';
import { SqlQueueLinks } from './queue-links.js';
import { QueueOps } from './queue-ops.js';
import { loadQueueRow } from './queue-row.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';

/** What a transaction needs to act on queues: its dialect, wake-ups and clock mode. */
export interface QueueAccess {
  dialect: SqlDialect;
  wakes: WakeHub;
  /** Receivers of this process waiting for jobs, served by the transactions that make them ready. */
  handoffs: Handoffs;
  followClock: boolean;
}

/** The operations on `queue`, over its row loaded (and locked) once per transaction. */
export async function queueOps(
  access: QueueAccess,
  connection: SqlConnection,
  batch: BatchContext,
  queue: string,
): Promise<QueueOps> {
  const row = await loadQueueRow(connection, batch, access.dialect, queue);
  const links = new SqlQueueLinks(access, connection, batch, (target) =>
    wakeOnCommit(access, connection, batch, target),
  );
  return new QueueOps(connection, row, access.dialect, batch, access.followClock, links);
}

/**
 * Once the transaction commits, receivers of `queue` wake: in this process at once, in others
 * through the dialect's notification, sent with the COMMIT. Once per queue per transaction.
 * `served`: see wakeLocallyOnCommit.
 */
export async function wakeOnCommit(
  access: QueueAccess,
  connection: SqlConnection,
  batch: BatchContext,
  queue: string,
  served?: () => ServedWake,
): Promise<void> {
  wakeLocallyOnCommit(access, batch, queue, served);
  const key = `wake:${queue}`;
  if (batch.cache.has(key)) return;
  batch.cache.set(key, true);
  const statement = access.dialect.wakeStatement?.(queue);
  if (statement !== undefined) await connection.runBeforeCommit(statement.sql, statement.params);
}

/**
 * Once the transaction commits, this process's receivers of `queue` look again (no notify).
 * `served`: the transaction served them (Handoffs.serve); it reads what the wake-up says as the
 * transaction commits (see WakeListener). One call of the transaction without it wakes them all.
 */
export function wakeLocallyOnCommit(
  access: QueueAccess,
  batch: BatchContext,
  queue: string,
  served?: () => ServedWake,
): void {
  const key = `wake-local:${queue}`;
  const known = batch.cache.get(key) as { served: (() => ServedWake) | undefined } | undefined;
  if (known !== undefined) {
    if (served === undefined) known.served = undefined;
    return;
  }
  const wake = { served };
  batch.cache.set(key, wake);
  batch.afterCommit(() => access.wakes.wake(queue, wake.served?.()));
}
