import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import type { Operation, Outcome } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { until } from '../until.js';
import { FrameClient } from './frames.js';

// A connection that ends closes the sessions opened over it, releasing their deliveries (R12):
// those a consumer received count as deliveries of their jobs. Deliveries a batch frame's reserve
// took whose answer was still waiting behind the answers of earlier frames never reached anyone:
// they go back unworked (R33, docs/stream.md), even in a session the end closes.

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server whose `stats` batches are applied at once but answered only once released. */
async function serveHoldingStats() {
  const real = await open('memory:');
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const broker = withWrappedQueues(real, (queue: Queue) =>
    Object.assign(Object.create(queue), {
      execute: async (operations: Operation[]): Promise<Outcome[]> => {
        const outcomes = await queue.execute(operations);
        if (operations[0]?.type === 'stats') await gate;
        return outcomes;
      },
    }),
  );
  const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
  cleanups.push(
    () => real.close(),
    () => app.close(),
    () => release(),
  );
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return { baseUrl, queue: await real.queue('jobs', { maxDeliveries: 1 }), release };
}

describe('a session closed by the end of its connection', () => {
  it('gives back unworked what a reserve took whose answer had not gone out', async () => {
    const server = await serveHoldingStats();
    await server.queue.publish({ id: 'a', payload: 1 });
    const client = await FrameClient.open(server.baseUrl);
    const opened = await client.request({
      type: 'batch',
      id: 1,
      queue: 'jobs',
      operations: [{ type: 'openSession' }],
    });
    const session = opened.results[0].value;
    // The stats answer is held: the reserve's answer waits behind it.
    client.send({ type: 'batch', id: 2, queue: 'jobs', operations: [{ type: 'stats' }] });
    client.send({
      type: 'batch',
      id: 3,
      queue: 'jobs',
      operations: [{ type: 'reserve', max: 1, session }],
    });
    await until(async () => (await server.queue.stats()).active === 1, {
      what: 'one active job',
      tries: 500,
    });
    client.socket.terminate();
    await until(async () => (await server.queue.stats()).sessions === 0, {
      what: 'no session',
      tries: 500,
    });
    server.release();
    await until(async () => (await server.queue.job('a'))?.state !== 'active', {
      what: 'job a no longer active',
      tries: 500,
    });
    // Nobody received it: ready again, no delivery counted, so not dead at maxDeliveries 1.
    expect(await server.queue.job('a')).toMatchObject({ state: 'ready', deliveryCount: 0 });
  });

  it('gives back unworked what a subscription reserved with acks whose answer had not gone out', async () => {
    const server = await serveHoldingStats();
    await server.queue.publishBatch([
      { id: 'a', payload: 1 },
      { id: 'b', payload: 2 },
    ]);
    const client = await FrameClient.open(server.baseUrl);
    const opened = await client.request({
      type: 'batch',
      id: 1,
      queue: 'jobs',
      operations: [{ type: 'openSession' }],
    });
    const session = opened.results[0].value;
    await client.request({ type: 'subscribe', id: 2, queue: 'jobs', prefetch: 1, session });
    const [a] = (await client.next((frame) => frame.type === 'deliveries')).deliveries;
    expect(a.id).toBe('a');
    // The ack gives the credit back: b is reserved with it, to be pushed behind its answer,
    // which waits behind the held stats answer.
    client.send({ type: 'batch', id: 3, queue: 'jobs', operations: [{ type: 'stats' }] });
    client.send({
      type: 'batch',
      id: 4,
      queue: 'jobs',
      operations: [{ type: 'ack', receipts: [a.receipt] }],
    });
    await until(async () => (await server.queue.job('b'))?.state === 'active', {
      what: 'job b active',
      tries: 500,
    });
    client.socket.terminate();
    await until(async () => (await server.queue.stats()).sessions === 0, {
      what: 'no session',
      tries: 500,
    });
    server.release();
    await until(async () => (await server.queue.job('b'))?.state !== 'active', {
      what: 'job b no longer active',
      tries: 500,
    });
    expect(await server.queue.job('b')).toMatchObject({ state: 'ready', deliveryCount: 0 });
  });
});
