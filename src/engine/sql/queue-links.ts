import { type DeadLetterOrigin, NotFoundError } from '../../core/index.js';
import { hasGeneratedForm } from '../../core/text.js';
import type { BatchContext } from './executor.js';
import type { QueueAccess } from './queue-access.js';
import { loadQueueRow, type QueueRow } from './queue-row.js';
import { backPosition } from './ready-bands.js';
import type { SqlConnection } from './sql-connection.js';

/** A job row leaving its queue (R26): what the receiving queue keeps of it. */
export interface RowTransfer {
  id: string;
  /** The history as stored (JSON), with the attempt that just ended already appended. */
  history: string | null;
  /** Set when the job moves by dying; a move by `moveJobs` clears it. */
  origin: DeadLetterOrigin | undefined;
  /** Kept (R23): the job joins the back of this priority there. */
  priority: number;
  /** Kept (R24): the job joins the back of this group there, waiting if it has members. */
  grp: string | null;
}

/**
 * How a queue's operations reach the engine's other queues inside the same transaction
 * (R26): the job's row changes queue in one statement, and the receiving queue's row (loaded
 * and saved once per transaction, like any queue's) counts it. The SQL twin of the memory
 * engine's links between its `LeaseQueue`s.
 */
export class SqlQueueLinks {
  constructor(
    private readonly access: QueueAccess,
    private readonly connection: SqlConnection,
    private readonly batch: BatchContext,
    /** Wakes the receivers of a queue once the transaction commits. */
    private readonly wakeOnCommit: (queue: string) => Promise<void>,
  ) {}

  /**
   * Moves the job into `queue` as ready, at the back, deliveryCount 0. False when there is
   * no such queue or the id is present or remembered there (R4): the row stays untouched.
   */
  async admit(source: QueueRow, queue: string, now: number, job: RowTransfer): Promise<boolean> {
    if (queue === source.name) return false;
    const target = await this.targetRow(queue);
    if (target === undefined) return false;
    // The target may have sat idle: what it remembers (R4) is judged at the arrival, not at
    // its own last step, whose expired ids only that queue's next step deletes.
    const at = Math.max(now, target.queueTime);
    const [taken] = await this.connection.query<{ one: number }>(
      `SELECT 1 AS one FROM leaseq_jobs WHERE queue = ? AND id = ?
       UNION ALL SELECT 1 AS one FROM leaseq_acked WHERE queue = ? AND id = ? AND forget_at > ?`,
      [queue, job.id, queue, job.id, at],
    );
    if (taken !== undefined) return false;
    if (hasGeneratedForm(job.id)) target.generatedFormSeen = true;
    const waits = job.grp !== null && (await this.groupHasMembers(queue, job.grp));
    const seq = target.nextSeq++;
    if (waits) target.waiting += 1;
    else target.ready += 1;
    // R30: its expiresAt stays behind (a time of the queue it left); the retention of the
    // queue it joins counts from its publish. Its expiry may be due at once: the next step looks.
    const retention = target.options.retention ?? null;
    if (retention !== null) target.nextEventAt = Math.min(target.nextEventAt, target.queueTime);
    await this.connection.run(
      `UPDATE leaseq_jobs SET queue = ?, seq = ?, group_seq = ?, state = ?, delivery_count = 0,
         available_at = ?, ready_pos = ?, ready_since = ?, token = NULL, delivered_at = NULL,
         deadline = NULL, session = NULL, dead_reason = NULL, dead_at = NULL, dead_seq = NULL,
         history = ?, origin_queue = ?, origin_reason = ?, origin_at = ?, expires_at = NULL,
         expiry_at = published_at + ?
       WHERE queue = ? AND id = ?`,
      [
        queue,
        seq,
        job.grp === null ? null : seq,
        waits ? 'waiting' : 'ready',
        at,
        waits ? null : backPosition(target, job.priority),
        at,
        job.history,
        job.origin?.queue ?? null,
        job.origin?.reason ?? null,
        job.origin?.at ?? null,
        retention,
        source.name,
        job.id,
      ],
    );
    await this.wakeOnCommit(queue);
    return true;
  }

  /** R28: once the transaction commits, this process hears that the delivery was cancelled. */
  deliveryCancelled(queue: string, token: number): void {
    this.batch.afterCommit(() => this.access.wakes.cancelled(queue, token));
  }

  /** R24: whether group `grp` of `queue` has a member that is not dead (a newcomer waits). */
  private async groupHasMembers(queue: string, grp: string): Promise<boolean> {
    const [row] = await this.connection.query<{ one: number }>(
      `SELECT 1 AS one FROM leaseq_jobs WHERE queue = ? AND grp = ? AND state <> 'dead' LIMIT 1`,
      [queue, grp],
    );
    return row !== undefined;
  }

  /** The receiving queue's row, or undefined when there is no such queue. */
  private async targetRow(queue: string): Promise<QueueRow | undefined> {
    const [exists] = await this.connection.query<{ one: number }>(
      'SELECT 1 AS one FROM leaseq_queues WHERE name = ?',
      [queue],
    );
    if (exists === undefined) return undefined;
    try {
      return await loadQueueRow(this.connection, this.batch, this.access.dialect, queue);
    } catch (error) {
      // Deleted by another process while this one waited for its lock: no such queue.
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
}
