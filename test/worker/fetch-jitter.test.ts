import { afterEach, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { StorageUnavailableError } from '../../src/core/index.js';
import { Harness, silentLogger } from '../../src/testing/index.js';
import { FETCH_RETRY, fetchRetryDelay, fetchRetryJitter } from '../../src/worker/fetch-retry.js';
import { Worker } from '../../src/worker/index.js';

const harnesses: Harness[] = [];
afterEach(async () => {
  fetchRetryJitter.random = Math.random;
  for (const h of harnesses.splice(0)) await h.close();
});

/** The step of the `failures`-th retry: 100 ms doubling, at most 5 s. */
const step = (failures: number) =>
  Math.min(FETCH_RETRY.maxDelay, FETCH_RETRY.baseDelay * 2 ** (failures - 1));

it('a fetch retry waits half its step and a random share of the other half (equal jitter)', () => {
  fetchRetryJitter.random = () => 0;
  expect([1, 2, 3, 9, 10, 40].map(fetchRetryDelay)).toEqual(
    [1, 2, 3, 9, 10, 40].map((failures) => step(failures) / 2),
  );
  fetchRetryJitter.random = () => 0.999_999;
  expect([1, 2, 3, 9, 10, 40].map(fetchRetryDelay)).toEqual(
    [1, 2, 3, 9, 10, 40].map((failures) => step(failures) - 1),
  );
  fetchRetryJitter.random = () => 0.5;
  expect(fetchRetryDelay(1)).toBe(75);
  // However long the outage, the delay stays a whole number within the cap: a worker is back at
  // work at most 5 s after its storage or server is.
  expect(fetchRetryDelay(5000)).toBe(3_750);
  expect(fetchRetryDelay(7)).toBe(3_750);
});

it('drawn from Math.random, the delays of one failure count differ, within [step / 2, step)', () => {
  const delays = Array.from({ length: 200 }, () => fetchRetryDelay(8));
  for (const delay of delays) {
    expect(Number.isSafeInteger(delay)).toBe(true);
    expect(delay).toBeGreaterThanOrEqual(step(8) / 2);
    expect(delay).toBeLessThan(step(8));
  }
  // 200 draws over 6,400 values: all alike only if the source were fixed.
  expect(new Set(delays).size).toBeGreaterThan(100);
});

it('workers whose receives fail together retry apart, each after its own draw', async () => {
  const h = await Harness.open();
  harnesses.push(h);
  // The first worker to retry draws 0, the second 0.98.
  const draws = [0, 0.98];
  fetchRetryJitter.random = () => draws.shift() ?? 0.5;
  let down = true;
  const receives: string[] = [];
  const failing = (name: string): Queue =>
    Object.create(h.queue, {
      receive: {
        value: (options: Parameters<Queue['receive']>[0]) => {
          receives.push(`${name}@${h.clock.now()}`);
          if (down) return Promise.reject(new StorageUnavailableError('database down'));
          return h.queue.receive(options);
        },
      },
    });
  const workers = ['a', 'b'].map(
    (name) => new Worker(failing(name), async () => {}, { clock: h.clock, logger: silentLogger }),
  );
  for (const worker of workers) await worker.start();
  await h.flush();
  expect(receives).toEqual(['a@0', 'b@0']);
  down = false;
  await h.advance(100, { step: 1 });
  // Without jitter both would have asked again at the same instant.
  expect(receives).toEqual(['a@0', 'b@0', 'a@50', 'b@99']);
  for (const worker of workers) await worker.close({ timeout: 0 });
});
