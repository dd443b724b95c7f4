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
  await notifyOnCommit(access, connection, batch, queue);
}

/** Receivers of `queue` in other processes wake once the transaction commits (once per queue). */
async function notifyOnCommit(
  access: QueueAccess,
  connection: SqlConnection,
  batch: BatchContext,
  queue: string,
): Promise<void> {
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
  const wake = localWake(access, batch, queue);
  if (served === undefined) wake.all = true;
  else {
    wake.served ??= served;
    // What sessions that timed out before released, this serve offered.
    wake.releasedUnserved = false;
  }
}

/**
 * Sessions of `queue` timed out in the transaction's step (R3): once it commits, the receivers
 * of other processes wake (the dialect's notification) and so do this process's, as a close
 * wakes them, so that a receiver of such a session that runs no call of its own (a stream
 * subscription whose credit is all in use) learns of the end then (R16), not at its next look.
 * Here the receives of those sessions look (ServedWake.sessionsEnded), and the others only if
 * the ends `released` deliveries that no serve of the transaction offered them after: a session
 * that ends holding nothing made nothing ready. `nextEventAt`: the queue's, read as it commits.
 */
export async function wakeForTimedOutSessions(
  access: QueueAccess,
  connection: SqlConnection,
  batch: BatchContext,
  queue: string,
  ended: { ids: readonly string[]; released: boolean; nextEventAt: () => number },
): Promise<void> {
  const wake = localWake(access, batch, queue);
  wake.timedOut.push(...ended.ids);
  wake.nextEventAt ??= ended.nextEventAt;
  if (ended.released) wake.releasedUnserved = true;
  await notifyOnCommit(access, connection, batch, queue);
}

/** What this process's receivers of a queue are told once the transaction commits. */
interface LocalWake {
  /** A call of the transaction woke every receiver (see wakeLocallyOnCommit). */
  all: boolean;
  /** What the first serve of the transaction says (see wakeLocallyOnCommit). */
  served: (() => ServedWake) | undefined;
  /** Sessions that timed out in the transaction (see wakeForTimedOutSessions). */
  timedOut: string[];
  /** Those sessions released deliveries after the last serve of the transaction. */
  releasedUnserved: boolean;
  /** The queue's next event, read as the transaction commits, where no serve says it. */
  nextEventAt: (() => number) | undefined;
}

/** The transaction's LocalWake of `queue`, told once it commits. */
function localWake(access: QueueAccess, batch: BatchContext, queue: string): LocalWake {
  const key = `wake-local:${queue}`;
  const known = batch.cache.get(key) as LocalWake | undefined;
  if (known !== undefined) return known;
  const wake: LocalWake = {
    all: false,
    served: undefined,
    timedOut: [],
    releasedUnserved: false,
    nextEventAt: undefined,
  };
  batch.cache.set(key, wake);
  batch.afterCommit(() => access.wakes.wake(queue, servedWake(wake)));
  return wake;
}

/** What a LocalWake says as its transaction commits (see WakeListener); undefined: all look. */
function servedWake(wake: LocalWake): ServedWake | undefined {
  if (wake.all || wake.releasedUnserved) return undefined;
  if (wake.served === undefined) {
    // Only sessions that timed out holding nothing: no serve is owed.
    const nextEventAt = wake.nextEventAt?.() ?? Number.NEGATIVE_INFINITY;
    return { nextEventAt, unseen: [], sessionsEnded: wake.timedOut };
  }
  const served = wake.served();
  if (wake.timedOut.length === 0) return served;
  // A serve after the step names them too: each once.
  const ended = new Set([...(served.sessionsEnded ?? []), ...wake.timedOut]);
  return { ...served, sessionsEnded: [...ended] };
}
