import { request } from 'node:http';
import { expect } from 'vitest';
import type { Broker, Queue, ReceiveOptions } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { captureLogs, withWrappedQueues } from './helpers.js';

/**
 * A broker whose waiting receives answer only once the request's signal says the client left,
 * and then reserve what is ready: what a receive woken by a publish at that moment would
 * answer. Makes certain the race of a long poll taking jobs just as its client goes away.
 * `parked` is called as a receive starts to wait.
 */
export function racyBroker(real: Broker, parked: () => void): Broker {
  return withWrappedQueues(
    real,
    (queue: Queue): Queue =>
      new Proxy(queue, {
        get(target, key) {
          if (key === 'receive') {
            return async (options: ReceiveOptions = {}) => {
              const { signal, wait = 0, ...reserve } = options;
              if (signal === undefined || wait === 0) return target.receive(options);
              parked();
              await new Promise<void>((resolve) => {
                if (signal.aborted) resolve();
                else signal.addEventListener('abort', () => resolve(), { once: true });
              });
              return target.receive(reserve);
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }),
  );
}

/**
 * A server (SQS on too) over a memory broker made racy: `parked` resolves once a receive
 * waits; `lines` are its log lines. `close` ends both.
 */
export async function startRacyServer() {
  const broker = await open('memory:');
  const { lines, logger } = captureLogs();
  let parkedNow!: () => void;
  const parked = new Promise<void>((resolve) => {
    parkedNow = resolve;
  });
  const app = await createApp({
    broker: racyBroker(broker, () => parkedNow()),
    receiptSecret: 'test-secret-of-at-least-32-characters',
    logger,
    sqs: {},
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    broker,
    baseUrl,
    parked,
    lines,
    close: () => app.close().finally(() => broker.close()),
  };
}

/** Sends a POST, and cuts its connection once the server's receive is parked. */
export async function cutWhileParked(
  parked: Promise<void>,
  url: string,
  init: { headers: Record<string, string>; body: string },
): Promise<void> {
  const sent = request(url, { method: 'POST', headers: init.headers });
  const answered = new Promise<string>((resolve) => {
    sent.on('response', () => resolve('answered'));
    sent.on('error', () => resolve('cut'));
  });
  sent.end(init.body);
  await parked;
  sent.destroy();
  expect(await answered).toBe('cut');
}
