import { afterEach, describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { FrameClient } from './frames.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function serve() {
  const broker = await open('memory:');
  const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
  closing.push(
    () => broker.close(),
    () => app.close(),
  );
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const jobs = await broker.queue('jobs', { visibility: 60_000 });
  await jobs.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
  const client = await FrameClient.open(baseUrl);
  closing.push(() => client.close());
  await client.request({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 1 });
  const [first] = await client
    .next(() => client.pushed(1).length === 1)
    .then(() => client.pushed(1));
  return { jobs, client, receipt: (first as { receipt: string }).receipt };
}

describe('a receipt named twice in the acks of one batch frame', () => {
  it.each([
    ['in one ack', (receipt: string) => [{ type: 'ack', receipts: [receipt, receipt] }]],
    [
      'in two acks',
      (receipt: string) => [
        { type: 'ack', receipts: [receipt] },
        { type: 'ack', receipts: [receipt] },
      ],
    ],
  ])(
    'R6 R33 gives back its credit once: the subscription reserves no job beyond its prefetch (%s)',
    async (_, operations) => {
      const { jobs, client, receipt } = await serve();

      const answer = await client.request({
        type: 'batch',
        id: 2,
        queue: 'jobs',
        operations: operations(receipt),
      });
      expect(answer.results.flatMap((result: { value: boolean[] }) => result.value)).toEqual([
        true,
        false,
      ]);
      await client.next(() => client.pushed(1).length === 2);
      expect(client.pushed(1).map((delivery: { id: string }) => delivery.id)).toEqual(['a', 'b']);

      // One job taken with the ack, within the prefetch of 1: none reserved beyond it and given
      // back unworked, so no delivery or nack was counted that no consumer made, and the next
      // reservation takes the next token (R6).
      const stats = await jobs.stats();
      expect({
        deliveries: stats.deliveries,
        nacks: stats.nacks,
        unworked: stats.unworked,
      }).toEqual({
        deliveries: 2,
        nacks: 0,
        unworked: 0,
      });
      const [next] = await jobs.receive();
      expect(next).toMatchObject({ id: 'c', token: 3, deliveryCount: 1 });
    },
  );
});
