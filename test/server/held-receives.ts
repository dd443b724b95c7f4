import type { Server } from 'node:http';
import type { Broker, Queue, ReceiveOptions } from '../../src/broker/index.js';
import type { Delivery } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from './helpers.js';

/** A long poll the server holds: `answer` ends it with these deliveries, whatever its client did. */
export interface HeldReceive {
  /** What the receive asked for, its wait and signal aside. */
  reserve: Omit<ReceiveOptions, 'wait' | 'signal'>;
  /** The server's signal of the request: aborted once its client went away. */
  signal: AbortSignal | undefined;
  answer(deliveries: Delivery[]): void;
}

/**
 * A server over a memory broker whose waiting receives (wait > 0) wait for the test, not for
 * work, and ignore their signal: the test reserves with `storage` and answers a held receive at
 * the very moment it chooses, in the same turn as its client stops, before the server can see
 * that stop. `held()` is the next receive held (in the order they came).
 */
export async function startHeldServer() {
  const storage = await open('memory:');
  const waiting: HeldReceive[] = [];
  const wakers: (() => void)[] = [];
  const unanswered = new Set<(deliveries: Delivery[]) => void>();
  const broker: Broker = withWrappedQueues(
    storage,
    (queue: Queue): Queue =>
      new Proxy(queue, {
        get(target, key) {
          if (key === 'receive') {
            return (options: ReceiveOptions = {}) => {
              const { wait = 0, signal, ...reserve } = options;
              if (wait === 0) return target.receive(options);
              return new Promise<Delivery[]>((answer) => {
                unanswered.add(answer);
                const once = (deliveries: Delivery[]) => {
                  unanswered.delete(answer);
                  answer(deliveries);
                };
                waiting.push({ reserve, signal, answer: once });
                for (const wake of wakers.splice(0)) wake();
              });
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }),
  );
  const app = await createApp({
    broker,
    receiptSecret: 'test-secret-of-at-least-32-characters',
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    baseUrl,
    /** The storage itself, its receives not held. */
    storage,
    /** The server's node:http server, to watch its connections. */
    server: app.server as Server,
    async held(): Promise<HeldReceive> {
      while (waiting.length === 0) await new Promise<void>((resolve) => wakers.push(resolve));
      return waiting.shift() as HeldReceive;
    },
    /** Ends the held receives left (empty), the server and its connections, then the storage. */
    async close() {
      for (const answer of [...unanswered]) answer([]);
      (app.server as Server).closeAllConnections();
      await app.close();
      await storage.close();
    },
  };
}
