import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { NotFoundError } from '../../src/core/index.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { startTestServer } from '../server/helpers.js';

// Two servers over one PostgreSQL database, as several machines run leaseq: what one server
// does to a queue reaches the consumers of the other, not only its own.
const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});
const skip = await postgresSkipReason();

async function twoServers() {
  const here = await startTestServer({ url: postgresUrl() });
  closing.push(() => here.close());
  const there = await startTestServer({ url: postgresUrl() });
  closing.push(() => there.close());
  return { here, there };
}

describe.skipIf(skip !== undefined)('two servers over one PostgreSQL database', () => {
  for (const transport of ['stream', 'http'] as const) {
    it(`a queue deleted through one server ends the waiting receives of the other (${transport}): NOT_FOUND, and no job of a queue made again under the name`, async () => {
      const { here, there } = await twoServers();
      const name = queueName('deleted-elsewhere');
      await here.broker.queue(name);
      const client = new RemoteBroker(there.baseUrl, { transport });
      closing.push(() => client.close());
      const queue = await client.queue(name);
      const started = Date.now();
      const receiving = queue.receive({ wait: 15_000 }).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await here.broker.deleteQueue(name);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const again = await here.broker.queue(name);
      await again.publish({ id: 'of-the-new-queue' });
      try {
        const received = await receiving;
        expect(received).toBeInstanceOf(NotFoundError);
        // Not at the end of its wait.
        expect(Date.now() - started).toBeLessThan(10_000);
        expect(await again.job('of-the-new-queue')).toMatchObject({ state: 'ready' });
      } finally {
        await here.broker.deleteQueue(name);
      }
    });
  }
});

describe.skipIf(skip !== undefined)('two processes over one PostgreSQL database', () => {
  it('a lease shortened by extend in one wakes the receivers of the other, which take its job when it ends', async () => {
    const here = await startTestServer({ url: postgresUrl() });
    closing.push(() => here.close());
    const there = await startTestServer({ url: postgresUrl() });
    closing.push(() => there.close());
    const name = queueName('shortened-elsewhere');
    const held = await here.broker.queue(name, { visibility: 30_000 });
    try {
      await held.publish({ id: 'job' });
      const [delivery] = await held.receive({ max: 1 });
      expect(delivery?.id).toBe('job');
      const waiting = await there.broker.queue(name);
      const started = Date.now();
      const receiving = waiting.receive({ wait: 15_000 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await held.extend(delivery?.token ?? 0, 1);
      const [again] = await receiving;
      expect(again).toMatchObject({ id: 'job', deliveryCount: 2 });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await here.broker.deleteQueue(name);
    }
  });
});
