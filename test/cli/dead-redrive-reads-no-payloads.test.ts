import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker, Queue } from '../../src/broker/index.js';
import type { DeadLetterPageOptions } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq dead redrive <queue>` without ids lists the dead jobs to redrive them by id. Only
// their ids are needed: the list asks for no payloads (a dead set of large payloads read whole
// is hundreds of megabytes through the server and held at once by the command).

const DEAD = 2_500;

let broker: Broker;
let close: () => Promise<void>;
let env: Record<string, string>;
const pages: (DeadLetterPageOptions | undefined)[] = [];

beforeAll(async () => {
  broker = await open('memory:');
  const app = await createApp({
    receiptSecret: 'test-secret-of-at-least-32-characters',
    broker: withWrappedQueues(broker, (queue: Queue) =>
      Object.assign(Object.create(queue) as Queue, {
        deadLetterPage: (options?: DeadLetterPageOptions) => {
          pages.push(options);
          return queue.deadLetterPage(options);
        },
      }),
    ),
  });
  env = { LEASEQ_SERVER: await app.listen({ host: '127.0.0.1', port: 0 }) };
  close = () => app.close().finally(() => broker.close());
});

afterAll(async () => {
  await close?.();
});

describe('dead redrive of every dead job', () => {
  for (const transport of ['stream', 'http']) {
    it(`lists the dead jobs without their payloads, every page of them (${transport})`, async () => {
      const name = `unread-${transport}`;
      const queue = await broker.queue(name, { maxDeliveries: 1 });
      const ids = Array.from({ length: DEAD }, (_, n) => `job-${n}`);
      await queue.publishBatch(ids.map((id) => ({ id, payload: { body: 'x'.repeat(100) } })));
      for (const delivery of await queue.receive({ max: DEAD })) {
        await queue.nack(delivery.token, { requeue: false });
      }
      pages.length = 0;
      const run = await leaseq(['dead', 'redrive', name, '--transport', transport, '--json'], {
        env,
      });
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ redriven: DEAD });
      // Three pages of at most 1,000, none of them with payloads.
      expect(pages.length).toBeGreaterThanOrEqual(3);
      for (const options of pages) expect(options).toMatchObject({ payloads: false });
      expect(await queue.stats()).toMatchObject({ ready: DEAD, dead: 0, redriven: DEAD });
      // Redriven in the order they died: the back of ready, oldest first.
      expect((await queue.inspect()).ready).toEqual(ids);
    });
  }
});
