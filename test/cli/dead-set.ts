import type { Broker, Queue } from '../../src/broker/index.js';
import { createApp } from '../../src/server/index.js';

/**
 * A server on 127.0.0.1 over `served` (the broker, or a wrapper of it that watches its calls)
 * for the commands to reach: the environment that names it, and a close of both.
 */
export async function serveForCommands(
  broker: Broker,
  served: Broker = broker,
): Promise<{ env: Record<string, string>; close: () => Promise<void> }> {
  const app = await createApp({
    receiptSecret: 'test-secret-of-at-least-32-characters',
    broker: served,
  });
  const env = { LEASEQ_SERVER: await app.listen({ host: '127.0.0.1', port: 0 }) };
  return { env, close: () => app.close().finally(() => broker.close()) };
}

/** Dead-letters every ready job of `queue` (a nack without requeue each); how many. */
export async function deadLetterReady(queue: Queue, reason?: string): Promise<number> {
  let count = 0;
  for (;;) {
    const deliveries = await queue.receive({ max: 1000 });
    if (deliveries.length === 0) return count;
    for (const delivery of deliveries) {
      await queue.nack(delivery.token, {
        requeue: false,
        ...(reason === undefined ? {} : { reason }),
      });
    }
    count += deliveries.length;
  }
}
