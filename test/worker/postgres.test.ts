import { describe, expect, it } from 'vitest';
import {
  open,
  PermanentError,
  silentLogger,
  TransactionalInbox,
  ValidationError,
  work,
} from '../../src/index.js';
import { postgresReachable, postgresUrl, queueName } from '../conformance/engines.js';

// The worker over PostgreSQL on the wall clock: the manual-clock suites run over memory and
// SQLite; here the real fetch loop, outcomes and the transactional inbox meet a shared database.
const reachable = await postgresReachable();

describe.skipIf(!reachable)(
  'the worker over PostgreSQL (skipped only when unreachable outside CI)',
  () => {
    it('acks what returns, dead-letters what is permanent, never exceeds its concurrency', async () => {
      const broker = await open(postgresUrl());
      const name = queueName('worker-pg');
      const queue = await broker.queue(name, { visibility: 10_000, maxDeliveries: 3 });
      await queue.publishBatch(
        Array.from({ length: 60 }, (_, i) => ({ id: `job-${i}`, payload: { n: i } })),
      );
      let inHand = 0;
      let mostInHand = 0;
      const worker = await work<{ n: number }>(
        queue,
        async (job) => {
          inHand += 1;
          mostInHand = Math.max(mostInHand, inHand);
          await new Promise((resolve) => setTimeout(resolve, 2));
          inHand -= 1;
          if (job.payload.n % 20 === 7)
            throw new PermanentError('bad input', { reason: 'invalid' });
        },
        { concurrency: 8, logger: silentLogger },
      );
      for (let waited = 0; waited < 200; waited += 1) {
        const stats = await queue.stats();
        if (stats.ready + stats.active === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await worker.close({ timeout: 5_000 });
      const stats = await queue.stats();
      expect({
        acks: stats.acks,
        dead: stats.dead,
        ready: stats.ready,
        active: stats.active,
      }).toEqual({
        acks: 57,
        dead: 3,
        ready: 0,
        active: 0,
      });
      const dead = (await queue.deadLetters()).map((letter) => `${letter.id}:${letter.reason}`);
      expect(dead.sort()).toEqual(['job-27:invalid', 'job-47:invalid', 'job-7:invalid']);
      expect(mostInHand).toBeLessThanOrEqual(8);
      expect(worker.metrics().outcomes.acked).toBe(57);
      await broker.deleteQueue(name);
      await broker.close();
    });

    it('jobs released at close go back in the order they were reserved (R12), ahead of the ready', async () => {
      const broker = await open(postgresUrl());
      const name = queueName('worker-pg-close');
      const queue = await broker.queue(name, { visibility: 10_000 });
      await queue.publishBatch(['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((id) => ({ id })));
      let started = 0;
      let allStarted!: () => void;
      const running = new Promise<void>((resolve) => {
        allStarted = resolve;
      });
      const worker = await work(
        queue,
        async (_job, { signal }) => {
          started += 1;
          if (started === 5) allStarted();
          await new Promise((resolve) => signal.addEventListener('abort', resolve));
        },
        { concurrency: 5, logger: silentLogger },
      );
      await running;
      await worker.close({ timeout: 0 });
      expect((await queue.inspect()).ready).toEqual(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);
      await broker.deleteQueue(name);
      await broker.close();
    });

    it('the transactional inbox runs an effect once, in the transaction of its claim', async () => {
      const broker = await open(postgresUrl());
      const inbox = new TransactionalInbox(broker);
      const consumer = queueName('consumer');
      let effects = 0;
      const effect = async () => {
        effects += 1;
        return effects;
      };
      const first = await inbox.processOnce(consumer, 'job-x', effect);
      const second = await inbox.processOnce(consumer, 'job-x', effect);
      expect(first).toEqual({ processed: true, value: 1 });
      expect(second).toEqual({ processed: false });
      await expect(inbox.processOnce('', 'job-y', effect)).rejects.toBeInstanceOf(ValidationError);
      expect(effects).toBe(1);
      await broker.close();
    });
  },
);
