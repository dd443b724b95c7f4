import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { call, withWrappedQueues } from '../server/helpers.js';
import { FrameClient } from './frames.js';

// A batch frame whose reserves are still running when the client closes the connection has an
// answer that can never go out: what they took goes back at once, unworked (R33), rather than
// stay leased, to nobody, until a deadline that may be hours away.

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; tries < 250; tries++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met in time');
}

describe('a reserve frame running when its connection closes', () => {
  it('R33 gives back what it reserved at once, unworked, when its answer cannot go out', async () => {
    const real = await open('memory:');
    // Option reads wait while held: a reserve naming no visibility reads the queue's lease.
    let held: Promise<void> | undefined;
    let release = () => {};
    let optionsAsked = () => {};
    const asked = new Promise<void>((resolve) => {
      optionsAsked = resolve;
    });
    const broker = withWrappedQueues(real, (queue: Queue) =>
      Object.assign(Object.create(queue), {
        options: async () => {
          if (held !== undefined) {
            optionsAsked();
            await held;
          }
          return queue.options();
        },
      }),
    );
    const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
    closing.push(
      () => real.close(),
      () => app.close(),
    );
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    // A lease of an hour: held to its deadline, the job would be out of reach for that long.
    await call(baseUrl, 'PUT', '/v1/queues/jobs', { body: { visibility: 3_600_000 } });
    const jobs = await real.queue('jobs');
    await jobs.publish({ id: 'a' });

    const client = await FrameClient.open(baseUrl);
    held = new Promise((resolve) => {
      release = resolve;
    });
    client.send({ type: 'batch', id: 1, queue: 'jobs', operations: [{ type: 'reserve', max: 1 }] });
    await asked;
    await client.close();
    release();

    // The reserve ran once the connection was gone: its job is ready again, no attempt counted.
    await until(async () => (await jobs.stats()).unworked === 1);
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, deliveries: 1, unworked: 1 });
    const [again] = await jobs.receive({ max: 1 });
    expect(again).toMatchObject({ id: 'a', deliveryCount: 1, redelivered: false });
  });
});
