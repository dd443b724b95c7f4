import { describe, expect, it } from 'vitest';
import { ConflictError, StorageLockedError } from '../../src/core/index.js';
import { uniqueQueueName } from '../crash/postgres.js';
import { lockWaiters, postgresProcesses } from './postgres-processes.js';

/**
 * Processes whose calls meet on the same queues: a queue deleted while others use it (R6, R26),
 * and calls that lock two queues in opposite orders. Each engine here is another process's: its
 * own pool of connections. A plain client holds a lock to stop a call half-way, where another
 * process's call then comes.
 */
const processes = postgresProcesses();
const { client, engine } = processes;

/** Whether `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  return Promise.race([settled, new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
}

describe('PostgreSQL: a queue deleted while another process uses it', () => {
  it('R6: a publish of another process lands before the deletion or is refused, never left behind in no queue', {
    timeout: 20_000,
  }, async (context) => {
    if (processes.skip !== undefined) context.skip(processes.skip);
    const name = uniqueQueueName('delete-race');
    const deleting = await engine();
    const publishing = await engine();
    const holder = await client();
    const observer = await client();
    await deleting.queue(name);
    const other = await publishing.queue(name);
    await other.openSession(1);
    // The deletion stops at the queue's sessions, which this transaction holds.
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM leaseq_sessions WHERE queue = $1 FOR UPDATE', [name]);
    const deleted = deleting.deleteQueue(name);
    await lockWaiters(observer, 1);
    const published = other.publish(2, { id: 'late' });
    // It either waits for the deletion or commits meanwhile; then the deletion goes on.
    await settlesWithin(published, 500);
    await holder.query('COMMIT');
    expect(await deleted).toBe(true);
    await published.catch(() => undefined);
    const { rows } = await observer.query('SELECT id FROM leaseq_jobs WHERE queue = $1', [name]);
    expect(rows).toEqual([]);
    const again = await deleting.queue(name);
    expect((await again.inspect()).ready).toEqual([]);
    await deleting.deleteQueue(name);
  });

  it('R26: a job dying into a dead-letter queue deleted meanwhile stays dead in its own queue', {
    timeout: 20_000,
  }, async (context) => {
    if (processes.skip !== undefined) context.skip(processes.skip);
    const source = uniqueQueueName('dlq-source');
    const target = uniqueQueueName('dlq-target');
    const consuming = await engine();
    const holder = await client();
    const observer = await client();
    await consuming.queue(target);
    const queue = await consuming.queue(source, { deadLetterQueue: target });
    await queue.publish(1, { id: 'a' });
    const [delivery] = await queue.reserve(1);
    // Another process deletes the dead-letter queue: its row is gone, not yet committed.
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock(744503, hashtext($1))', [target]);
    await holder.query('DELETE FROM leaseq_queues WHERE name = $1', [target]);
    const rejected = queue.nack(2, delivery?.token ?? 0, { requeue: false });
    await lockWaiters(observer, 1);
    await holder.query('COMMIT');
    expect(await rejected).toBe(true);
    expect((await queue.inspect()).dead.map((job) => job.id)).toEqual(['a']);
    await consuming.deleteQueue(source);
  });
});

describe('PostgreSQL: processes whose calls lock the same queues in opposite orders', () => {
  it('a call that deadlocks with another process is run again; a transaction that does fails with STORAGE_LOCKED', {
    timeout: 20_000,
  }, async (context) => {
    if (processes.skip !== undefined) context.skip(processes.skip);
    const source = uniqueQueueName('deadlock-source');
    const target = uniqueQueueName('deadlock-target');
    const moving = await engine();
    const writing = await engine();
    const observer = await client();
    const dead = await moving.queue(target);
    const queue = await moving.queue(source, { deadLetterQueue: target });
    await queue.publish(1, { id: 'a' });
    const [delivery] = await queue.reserve(1);
    await queue.nack(1, delivery?.token ?? 0, { requeue: false });
    // A caller's transaction holds the target queue; moving the job back locks the source
    // queue, then waits for the target; the transaction then wants the source: a deadlock,
    // which PostgreSQL breaks by rolling one of the two back. (A caller's transaction takes its
    // queues in the order of its calls, not in the one every other transaction keeps.)
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked = false;
    const transaction = writing.transaction?.(async (tx) => {
      await tx.publish(target, 2, { id: 'c' });
      locked = true;
      await held;
      await tx.publish(source, 2, { id: 'b' });
    });
    await expect.poll(() => locked).toBe(true);
    const moved = dead.moveJobs(2);
    await lockWaiters(observer, 1);
    release();
    const [committed, movedBack] = await Promise.allSettled([transaction, moved]);
    expect(movedBack).toEqual({ status: 'fulfilled', value: 1 });
    if (committed?.status === 'rejected') {
      expect(committed.reason).toBeInstanceOf(StorageLockedError);
    }
    expect((await queue.inspect()).ready).toContain('a');
    await moving.deleteQueue(source);
    await moving.deleteQueue(target);
  });

  it('R26: two processes that each name the other queue as dead-letter queue at once do not both succeed', {
    timeout: 30_000,
  }, async (context) => {
    if (processes.skip !== undefined) context.skip(processes.skip);
    const first = uniqueQueueName('chain-a');
    const second = uniqueQueueName('chain-b');
    const one = await engine();
    const other = await engine();
    await one.queue(first);
    await one.queue(second);
    for (let round = 0; round < 20; round++) {
      await one.updateQueue(first, { deadLetterQueue: null });
      await one.updateQueue(second, { deadLetterQueue: null });
      const outcomes = await Promise.allSettled([
        one.updateQueue(first, { deadLetterQueue: second }),
        other.updateQueue(second, { deadLetterQueue: first }),
      ]);
      const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(refused).toHaveLength(1);
      expect((refused[0] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    }
    await one.deleteQueue(first);
    await one.deleteQueue(second);
  });
});
