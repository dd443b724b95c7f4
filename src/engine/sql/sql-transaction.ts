import type { NackOptions, PublishInput, PublishResult } from '../../core/index.js';
import { checkTokens, Problems, resolveNackOptions } from '../../core/validate.js';
import type { EngineTransaction } from '../engine.js';
import { encodePayload } from '../payload.js';
import { checkQueueName } from '../queue-options.js';
import type { BatchContext } from './executor.js';
import { type QueueAccess, queueOps, wakeOnCommit } from './queue-access.js';
import type { QueueOps } from './queue-ops.js';
import type { SqlConnection, SqlValue } from './sql-connection.js';

/**
 * A caller's transaction on the engine's database: its own statements, acks, nacks and
 * publishes commit together or not at all. The exactly-once-effect path for state that lives
 * in the same database.
 */
export class SqlTransaction implements EngineTransaction {
  constructor(
    private readonly connection: SqlConnection,
    private readonly batch: BatchContext,
    private readonly access: QueueAccess,
  ) {}

  query<Row extends object>(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    return this.connection.query<Row>(sql, params);
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.connection.run(sql, params);
  }

  async ack(queue: string, now: number, token: number): Promise<boolean> {
    checkTokens([token]);
    const [acked] = await (await this.ops(queue)).ack(now, [token]);
    return acked as boolean;
  }

  async nack(queue: string, now: number, token: number, options?: NackOptions): Promise<boolean> {
    checkTokens([token]);
    const nack = resolveNackOptions(options);
    const done = await (await this.ops(queue)).nack(now, token, nack);
    if (done) await this.wakeAfterCommit(queue);
    return done;
  }

  async publish(queue: string, now: number, input: PublishInput = {}): Promise<PublishResult> {
    const payloadJson = encodePayload(input.payload, 'job');
    const encoded = { id: input.id, payloadJson, delay: input.delay ?? 0 };
    const [result] = await (await this.ops(queue)).publish(now, [encoded]);
    await this.wakeAfterCommit(queue);
    return result as PublishResult;
  }

  async claimOnce(consumer: string, jobId: string, now: number): Promise<boolean> {
    checkInboxArguments(consumer, jobId, now);
    const changed = await this.connection.run(
      `INSERT INTO leaseq_inbox (consumer, job_id, processed_at) VALUES (?, ?, ?)
       ON CONFLICT (consumer, job_id) DO NOTHING`,
      [consumer, jobId, now],
    );
    return changed > 0;
  }

  async pruneInbox(consumer: string, processedBefore: number): Promise<number> {
    checkInboxArguments(consumer, 'x', processedBefore);
    return this.connection.run('DELETE FROM leaseq_inbox WHERE consumer = ? AND processed_at < ?', [
      consumer,
      processedBefore,
    ]);
  }

  private ops(queue: string): Promise<QueueOps> {
    checkQueueName(queue);
    return queueOps(this.access, this.connection, this.batch, queue);
  }

  private wakeAfterCommit(queue: string): Promise<void> {
    return wakeOnCommit(this.access, this.connection, this.batch, queue);
  }
}

function checkInboxArguments(consumer: unknown, jobId: unknown, time: unknown): void {
  const problems = new Problems();
  problems.id('consumer', consumer);
  problems.id('jobId', jobId);
  problems.nonNegativeInteger('time', time);
  problems.throwIfAny();
}
