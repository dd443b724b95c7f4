import {
  build,
  byCodeUnits,
  ClosedError,
  checkQueueName,
  makesJobsReady,
  type NackOptions,
  type Operation,
  type PublishInput,
  type PublishResult,
  type ResultOf,
  reschedulesReceivers,
} from '../../core/index.js';
import { Problems } from '../../core/validate.js';
import type { EngineTransaction, ScheduleMove } from '../engine.js';
import type { ScheduleRecord } from '../schedules.js';
import type { BatchContext } from './executor.js';
import { type QueueAccess, queueOps, wakeLocallyOnCommit, wakeOnCommit } from './queue-access.js';
import { runOperation } from './run-operation.js';
import { advanceScheduleRow, advanceScheduleRows } from './schedule-rows.js';
import type { SqlConnection, SqlValue } from './sql-connection.js';

/**
 * A caller's transaction on the engine's database: its own statements, acks, nacks and
 * publishes commit together or not at all. The exactly-once-effect path for state that lives
 * in the same database.
 */
export class SqlTransaction implements EngineTransaction {
  private ended = false;
  /** The queues whose lock (the dialect's lock of a queue's name) this transaction holds. */
  private readonly lockedQueues = new Set<string>();

  constructor(
    private readonly connection: SqlConnection,
    private readonly batch: BatchContext,
    private readonly access: QueueAccess,
  ) {}

  /**
   * Its work returned or threw: the transaction committed or rolled back, and the connection
   * is another's now. A call kept past it (a leaked `tx`) would run outside any transaction,
   * or inside someone else's: refused.
   */
  end(): void {
    this.ended = true;
  }

  private checkOpen(): void {
    if (this.ended) {
      throw new ClosedError(
        'this transaction has ended: use tx only inside the function given to transaction(), and await every call there',
      );
    }
  }

  async query<Row extends object>(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    this.checkOpen();
    return this.connection.query<Row>(sql, params);
  }

  async run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    this.checkOpen();
    return this.connection.run(sql, params);
  }

  async ack(queue: string, now: number, token: number): Promise<boolean> {
    return (await this.apply(queue, now, build.ack(token)))[0] as boolean;
  }

  nack(queue: string, now: number, token: number, options?: NackOptions): Promise<boolean> {
    return this.apply(queue, now, build.nack(token, options));
  }

  async publish(queue: string, now: number, input: PublishInput = {}): Promise<PublishResult> {
    return (await this.apply(queue, now, build.publish(input)))[0] as PublishResult;
  }

  /** The same operations as a queue's, parsed the same way, in this transaction. */
  private async apply<O extends Operation>(queue: string, now: number, operation: O) {
    this.checkOpen();
    checkQueueName(queue);
    const ops = await queueOps(this.access, this.connection, this.batch, queue);
    const result = (await runOperation(ops, now, operation)) as ResultOf<O>;
    if (makesJobsReady(operation) || ops.othersMayGoOn()) {
      await wakeOnCommit(this.access, this.connection, this.batch, queue);
    } else if (reschedulesReceivers(operation)) {
      wakeLocallyOnCommit(this.access, this.batch, queue);
    }
    return result;
  }

  async claimOnce(consumer: string, jobId: string, now: number): Promise<boolean> {
    this.checkOpen();
    checkInboxArguments(consumer, jobId, now);
    const changed = await this.connection.run(
      `INSERT INTO leaseq_inbox (consumer, job_id, processed_at) VALUES (?, ?, ?)
       ON CONFLICT (consumer, job_id) DO NOTHING`,
      [consumer, jobId, now],
    );
    return changed > 0;
  }

  async advanceSchedule(read: ScheduleRecord, to: number | null): Promise<boolean> {
    this.checkOpen();
    await this.lockQueues([read.queue]);
    return advanceScheduleRow(this.connection, this.access.dialect, read, to);
  }

  async advanceSchedules(moves: readonly ScheduleMove[]): Promise<boolean[]> {
    this.checkOpen();
    await this.lockQueues(moves.map(({ read }) => read.queue));
    return advanceScheduleRows(this.connection, this.access.dialect, moves);
  }

  /**
   * Takes the lock of each queue before the rows of its schedules, as every transaction of a
   * queue does (its deletion, a replace of one of its schedules, a publish into it): holding a
   * schedule's row while waiting for its queue's lock to publish, a scheduler pass deadlocked
   * with a deletion or a replace, which hold the lock and wait for the row. Taken in one order,
   * by name, so that passes over the same queues wait for each other rather than deadlock.
   */
  private async lockQueues(queues: readonly string[]): Promise<void> {
    const statement = this.access.dialect.lockQueueName;
    if (statement === undefined) return;
    const names = [...new Set(queues)].filter((name) => !this.lockedQueues.has(name));
    for (const name of names.sort(byCodeUnits)) {
      await this.connection.query(statement, [name]);
      this.lockedQueues.add(name);
    }
  }

  async pruneInbox(consumer: string, processedBefore: number): Promise<number> {
    this.checkOpen();
    checkInboxArguments(consumer, 'x', processedBefore);
    return this.connection.run('DELETE FROM leaseq_inbox WHERE consumer = ? AND processed_at < ?', [
      consumer,
      processedBefore,
    ]);
  }
}

function checkInboxArguments(consumer: unknown, jobId: unknown, time: unknown): void {
  const problems = new Problems();
  problems.id('consumer', consumer);
  problems.id('jobId', jobId);
  problems.nonNegativeInteger('time', time);
  problems.throwIfAny();
}
