import { afterEach, describe, expect, it } from 'vitest';
import type { ReceiveOptions } from '../../src/broker/index.js';
import { RemoteBroker } from '../../src/client/index.js';
import { StorageUnavailableError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** A server whose queues' first `receive` fails as a storage that is down does. */
async function serveFailingOnce(): Promise<string> {
  const real = await open('memory:');
  let failures = 1;
  const broker = withWrappedQueues(real, (queue) =>
    Object.assign(Object.create(queue), {
      receive: (receive: ReceiveOptions) =>
        failures-- > 0
          ? Promise.reject(new StorageUnavailableError('the storage is down (test)'))
          : queue.receive(receive),
    }),
  );
  const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
  closing.push(
    () => real.close(),
    () => app.close(),
  );
  return app.listen({ host: '127.0.0.1', port: 0 });
}

describe('a subscription the storage fails as it opens', () => {
  it('fails the receive that opened it with the reason, and the next receive is served', async () => {
    const client = new RemoteBroker(await serveFailingOnce(), { transport: 'stream' });
    closing.push(() => client.close());
    const queue = await client.queue('jobs');
    await queue.publish({ id: 'a' });
    // The server answers `subscribed`, then its first receive fails and it ends the
    // subscription: the two frames arrive together.
    await expect(queue.receive({ max: 1, wait: 2000 })).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
    });
    const [job] = await queue.receive({ max: 1, wait: 2000 });
    expect(job?.id).toBe('a');
  });
});
