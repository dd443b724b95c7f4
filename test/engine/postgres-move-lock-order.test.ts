import { describe, expect, it } from 'vitest';
import type { MoveJobsOptions } from '../../src/core/index.js';
import { uniqueQueueName } from '../crash/postgres.js';
import { deadlocksDuring, lockWaiters, postgresProcesses } from './postgres-processes.js';

/**
 * R26 on PostgreSQL: a `moveJobs` takes the locks of the queues it moves jobs between in the
 * order every other transaction takes them (a queue before the queue it dead-letters into,
 * otherwise by name). Moving dead letters back from a dead-letter queue locked that queue
 * first, then each job's origin, while a job dying in the origin holds the origin and wants the
 * dead-letter queue: PostgreSQL broke the cycle after deadlock_timeout by rolling one back.
 *
 * Each engine here is another process's: its own pool of connections. A plain client holds
 * both queues' locks until both calls wait, then lets them go at once; the deadlocks the
 * engines' statements meet are counted where the driver answers them.
 */
const processes = postgresProcesses({ clockMode: 'follow' });
const { client, engine, holdQueues, names } = processes;

describe('PostgreSQL: moveJobs takes its queues in the order a job dying there does', () => {
  const cases: { label: string; options: (source: string) => MoveJobsOptions }[] = [
    { label: 'back to their origins', options: () => ({}) },
    { label: 'back to the origin named in origins', options: (source) => ({ origins: [source] }) },
    { label: 'to the queue that dead-letters into it', options: (source) => ({ to: source }) },
  ];
  for (const { label, options } of cases) {
    it(`R26 dead letters moved ${label} while a job dies there: no deadlock`, {
      timeout: 20_000,
    }, async (context) => {
      if (processes.skip !== undefined) context.skip(processes.skip);
      // The dead-letter queue's name sorts first: name order alone would take it first.
      const dead = uniqueQueueName('move-order-a-dead');
      const source = uniqueQueueName('move-order-b-source');
      names.push(source, dead);
      const dying = await engine();
      const moving = await engine();
      const observer = await client();
      await dying.queue(dead);
      const queue = await dying.queue(source, { deadLetterQueue: dead });
      await queue.publish(1, { id: 'died-before' });
      const [before] = await queue.reserve(1);
      await queue.nack(1, before?.token ?? 0, { requeue: false });
      await queue.publish(1, { id: 'dies-now' });
      const [now] = await queue.reserve(1);
      const moves = await moving.queue(dead);
      const deadlocks = await deadlocksDuring([source, dead], async () => {
        const release = await holdQueues([source, dead]);
        // A job dying holds its queue's lock while it takes its dead-letter queue's.
        const rejected = queue.nack(2, now?.token ?? 0, { requeue: false });
        await lockWaiters(observer, 1);
        const moved = moves.moveJobs(2, options(source));
        await lockWaiters(observer, 2);
        await release();
        expect(await rejected).toBe(true);
        expect(await moved).toBeGreaterThanOrEqual(1);
      });
      expect(deadlocks).toBe(0);
      expect((await queue.inspect()).ready).toContain('died-before');
    });
  }

  it('R26 two moves in opposite directions between two queues take them in one order: no deadlock', {
    timeout: 20_000,
  }, async (context) => {
    if (processes.skip !== undefined) context.skip(processes.skip);
    const first = uniqueQueueName('move-order-a');
    const second = uniqueQueueName('move-order-b');
    names.push(first, second);
    const one = await engine();
    const other = await engine();
    const observer = await client();
    const [oneFirst, otherSecond] = [await one.queue(first), await other.queue(second)];
    await oneFirst.publish(1, { id: 'from-first' });
    await otherSecond.publish(1, { id: 'from-second' });
    const deadlocks = await deadlocksDuring([first, second], async () => {
      const release = await holdQueues([first, second]);
      const forth = oneFirst.moveJobs(2, { to: second });
      await lockWaiters(observer, 1);
      const back = otherSecond.moveJobs(2, { to: first });
      await lockWaiters(observer, 2);
      await release();
      // Whichever went first moved its job, and the other moved both (or that one back).
      expect((await forth) + (await back)).toBeGreaterThanOrEqual(2);
    });
    expect(deadlocks).toBe(0);
  });
});
