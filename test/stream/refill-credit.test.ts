import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import type { Operation, Outcome } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { until } from '../until.js';
import { FrameClient } from './frames.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/**
 * A memory server whose next reserve made with acks (the only `reserve` the stream server
 * executes as an operation of its own, beside the clients' batches) is held: applied at once,
 * its deliveries handed to the subscription once `release()` is called. `decided` resolves with
 * how many it asked for.
 */
async function serveWithHeldRefill() {
  const real = await open('memory:');
  let decide: (max: number) => void = () => {};
  const decided = new Promise<number>((resolve) => {
    decide = resolve;
  });
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding = true;
  const broker = withWrappedQueues(real, (queue: Queue) =>
    Object.assign(Object.create(queue), {
      execute: async (operations: Operation[]): Promise<Outcome[]> => {
        const outcomes = queue.execute(operations);
        const [first] = operations;
        if (holding && operations.length === 1 && first?.type === 'reserve') {
          holding = false;
          decide(first.max);
          await gate;
        }
        return outcomes;
      },
    }),
  );
  const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
  closing.push(
    () => real.close(),
    () => app.close(),
  );
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return { real, baseUrl, decided, release };
}

describe('the next deliveries a subscription reserves with acks', () => {
  it('R33 are pushed when a credit frame lowers the prefetch before they are, and none go back unworked', async () => {
    const { real, baseUrl, decided, release } = await serveWithHeldRefill();
    const jobs = await real.queue('jobs', { visibility: 60_000 });
    await jobs.publishBatch(Array.from({ length: 10 }, (_, n) => ({ id: `j${n}` })));
    const client = await FrameClient.open(baseUrl);
    closing.push(() => client.close());

    await client.request({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 4 });
    await client.next(() => client.pushed(1).length === 4);
    const first = client.pushed(1);

    // Two acked: their credit comes back while the pump waits for it, so the next two are
    // reserved with the acks, under the prefetch of 4.
    client.send({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [
        { type: 'ack', receipts: first.slice(0, 2).map((d: { receipt: string }) => d.receipt) },
      ],
    });
    expect(await decided).toBe(2);
    // The client lowers the prefetch to the two it still holds before those are pushed. Its
    // answer comes after the batch's: the credit applies from then on.
    expect(
      await client.request({ type: 'credit', id: 3, subscription: 1, prefetch: 2 }),
    ).toMatchObject({ type: 'subscribed', prefetch: 2 });
    expect(client.frames.find((frame) => frame.id === 2)).toMatchObject({
      type: 'results',
      results: [{ ok: true, value: [true, true] }],
    });
    release();

    // Reserved under the credit then standing, they are pushed, as a receive's in flight are,
    // rather than given back: nothing was given back unworked (R33).
    await until(async () => client.pushed(1).length === 6 || (await jobs.stats()).unworked > 0, {
      what: 'six pushed, or one given back',
    });
    expect(await jobs.stats()).toMatchObject({
      active: 4,
      ready: 4,
      acks: 2,
      nacks: 0,
      unworked: 0,
    });
    expect(client.pushed(1).map((d: { id: string }) => d.id)).toEqual([
      'j0',
      'j1',
      'j2',
      'j3',
      'j4',
      'j5',
    ]);

    // The lowered prefetch holds for what is reserved after it: four unsettled against a
    // prefetch of 2 take nothing more until two of them are settled and two more freed.
    const [, , third, fourth, fifth, sixth] = client.pushed(1);
    await client.request({
      type: 'batch',
      id: 4,
      queue: 'jobs',
      operations: [{ type: 'ack', receipts: [third.receipt, fourth.receipt] }],
    });
    // A frame answered after everything the acks could have set going: still six pushed.
    await client.request({ type: 'batch', id: 5, queue: 'jobs', operations: [{ type: 'stats' }] });
    expect(client.pushed(1)).toHaveLength(6);
    expect(await jobs.stats()).toMatchObject({ active: 2, ready: 4 });

    await client.request({
      type: 'batch',
      id: 6,
      queue: 'jobs',
      operations: [{ type: 'ack', receipts: [fifth.receipt, sixth.receipt] }],
    });
    await client.next(() => client.pushed(1).length === 8);
    expect(
      client
        .pushed(1)
        .slice(6)
        .map((d: { id: string }) => d.id),
    ).toEqual(['j6', 'j7']);
    expect(await jobs.stats()).toMatchObject({ active: 2, ready: 2, acks: 6, unworked: 0 });
  });
});
