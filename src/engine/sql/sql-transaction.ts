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
import { prepareOperation, runOperation } from './run-operation.js';
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
  /** The last call on this transaction, settled or not: the next one runs after it. */
  private last: Promise<unknown> = Promise.resolve();
  /** Calls made and not yet settled. */
  private unsettled = 0;

  constructor(
    private readonly connection: SqlConnection,
    private readonly batch: BatchContext,
    private readonly access: QueueAccess,
    /**
     * Takes the locks of several queues, and of their dead-letter queues, in the order every
     * batch of calls of several queues takes them (the engine's lockQueuesInOrder), where the
     * storage keeps a lock per queue.
     */
    private readonly lockInOrder?: (
      connection: SqlConnection,
      names: readonly string[],
    ) => Promise<void>,
  ) {}

  /**
   * Its work returned or threw: the transaction is about to commit or roll back, and the
   * connection is another's then. A call kept past it (a leaked `tx`) would run outside any
   * transaction, or inside someone else's: refused. Resolves once the calls still under way
   * (made but not awaited) have settled, none of them running after it, and answers whether
   * there were any: their work, unawaited, cannot be part of a commit.
   */
  async end(): Promise<boolean> {
    this.ended = true;
    if (this.unsettled === 0) return false;
    await this.last;
    return true;
  }

  /** Until its work returned or threw. */
  get open(): boolean {
    return !this.ended;
  }

  private checkOpen(): void {
    if (this.ended) throw endedError();
  }

  /**
   * Runs `call` after the calls made before it: calls awaited together (`Promise.all`) share
   * one connection and the rows a transaction keeps of its queues, which a call resumed in the
   * middle of another's would read half-changed (two acks counted once, two publishes given
   * one generated id). One still under way when the work ended fails with ClosedError: the
   * transaction does not commit it.
   */
  private serial<T>(call: () => Promise<T>): Promise<T> {
    if (this.ended) return Promise.reject(endedError());
    this.unsettled += 1;
    const result = this.last.then(async () => {
      this.checkOpen();
      const value = await call();
      this.checkOpen();
      return value;
    });
    this.last = result.then(
      () => this.settled(),
      () => this.settled(),
    );
    return result;
  }

  private settled(): void {
    this.unsettled -= 1;
  }

  query<Row extends object>(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    return this.serial(() => this.connection.query<Row>(sql, params));
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.serial(() => this.connection.run(sql, params));
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
  private apply<O extends Operation>(queue: string, now: number, operation: O) {
    // As the call is made: the payloads kept are as they were then.
    const prepared = prepareOperation(operation);
    return this.serial(async () => {
      checkQueueName(queue);
      const ops = await queueOps(this.access, this.connection, this.batch, queue);
      const result = (await runOperation(ops, now, operation, prepared)) as ResultOf<O>;
      if (makesJobsReady(operation) || ops.othersMayGoOn()) {
        await wakeOnCommit(this.access, this.connection, this.batch, queue);
      } else if (reschedulesReceivers(operation)) {
        wakeLocallyOnCommit(this.access, this.batch, queue);
      }
      return result;
    });
  }

  claimOnce(consumer: string, jobId: string, now: number): Promise<boolean> {
    return this.serial(async () => {
      checkInboxArguments(consumer, jobId, now);
      const changed = await this.connection.run(
        `INSERT INTO leaseq_inbox (consumer, job_id, processed_at) VALUES (?, ?, ?)
       ON CONFLICT (consumer, job_id) DO NOTHING`,
        [consumer, jobId, now],
      );
      return changed > 0;
    });
  }

  advanceSchedule(read: ScheduleRecord, to: number | null): Promise<boolean> {
    return this.serial(async () => {
      await this.lockQueues([read.queue]);
      return advanceScheduleRow(this.connection, this.access.dialect, read, to);
    });
  }

  advanceSchedules(moves: readonly ScheduleMove[]): Promise<boolean[]> {
    return this.serial(async () => {
      await this.lockQueues(moves.map(({ read }) => read.queue));
      return advanceScheduleRows(this.connection, this.access.dialect, moves);
    });
  }

  /**
   * Takes the lock of each queue before the rows of its schedules, as every transaction of a
   * queue does (its deletion, a replace of one of its schedules, a publish into it): holding a
   * schedule's row while waiting for its queue's lock to publish, a scheduler pass deadlocked
   * with a deletion or a replace, which hold the lock and wait for the row. Several are taken
   * with their dead-letter queues, in the order a batch of calls of several queues takes them
   * (lockInOrder), so that passes, and a pass and a batch of another process, over the same
   * queues wait for each other rather than deadlock: taken by name, and a dead-letter queue only
   * as a publish past `maxLength` dropped a job into it (R31), a pass held a queue a batch
   * wanted next while waiting for one that batch held. One alone is taken before its
   * dead-letter queue, as a job dying there takes them.
   */
  private async lockQueues(queues: readonly string[]): Promise<void> {
    const statement = this.access.dialect.lockQueueName;
    if (statement === undefined) return;
    const names = [...new Set(queues)].filter((name) => !this.lockedQueues.has(name));
    if (names.length > 1 && this.lockInOrder !== undefined) {
      await this.lockInOrder(this.connection, names);
    } else {
      for (const name of names.sort(byCodeUnits)) {
        await this.connection.query(statement, [name]);
      }
    }
    for (const name of names) this.lockedQueues.add(name);
  }

  pruneInbox(consumer: string, processedBefore: number): Promise<number> {
    return this.serial(async () => {
      checkInboxArguments(consumer, 'x', processedBefore);
      return this.connection.run(
        'DELETE FROM leaseq_inbox WHERE consumer = ? AND processed_at < ?',
        [consumer, processedBefore],
      );
    });
  }
}

function endedError(): ClosedError {
  return new ClosedError(
    'this transaction has ended: use tx only inside the function given to transaction(), and await every call there',
  );
}

function checkInboxArguments(consumer: unknown, jobId: unknown, time: unknown): void {
  const problems = new Problems();
  problems.id('consumer', consumer);
  problems.id('jobId', jobId);
  problems.nonNegativeInteger('time', time);
  problems.throwIfAny();
}
