import { afterEach, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { ValidationError } from '../../src/core/index.js';
import { ManualClock, open } from '../../src/index.js';
import { closeOnSignals, silentLogger, Worker, type WorkerEvents } from '../../src/worker/index.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

async function worker(): Promise<Worker> {
  const broker = await open('memory:', { clock: new ManualClock() });
  closing.push(() => broker.close());
  const queue: Queue = await broker.queue('jobs', { visibility: 1000 });
  return new Worker(queue, async () => {}, { logger: silentLogger });
}

it('on() refuses an event the worker does not emit, or a listener that is not a function', async () => {
  const w = await worker();
  const on = w.on.bind(w) as (event: unknown, listener: unknown) => () => void;
  for (const event of ['outcomes', 'close', '__proto__', 'constructor', 7]) {
    expect(() => on(event, () => {})).toThrow(ValidationError);
  }
  expect(() => on('outcomes', () => {})).toThrow(
    `on: event must be 'outcome', 'error' or 'closed', got "outcomes"`,
  );
  for (const listener of ['log', undefined, {}]) {
    expect(() => on('error', listener)).toThrow(ValidationError);
  }
  const off = w.on('outcome', (() => {}) as WorkerEvents['outcome']);
  expect(typeof off).toBe('function');
  off();
});

it('closeOnSignals refuses what has no close(), before it takes any signal', async () => {
  const before = process.listenerCount('SIGTERM');
  for (const notWorker of [undefined, null, {}, { close: 'now' }]) {
    expect(() => closeOnSignals(notWorker as unknown as Worker)).toThrow(ValidationError);
  }
  expect(process.listenerCount('SIGTERM')).toBe(before);
});

it('an outcome goes to the listeners there were as it began: one added by a listener gets the next, one removed still gets this one', async () => {
  const w = await worker();
  const seen: string[] = [];
  let removeLast: () => void = () => {};
  let added = false;
  w.on('outcome', (record) => {
    seen.push(`first ${record.id}`);
    if (added) return;
    added = true;
    w.on('outcome', (next) => seen.push(`added ${next.id}`));
    removeLast();
  });
  removeLast = w.on('outcome', (record) => seen.push(`removed ${record.id}`));
  await w.queue.publish({ id: 'a' });
  await w.queue.publish({ id: 'b' });
  const outcome = () =>
    new Promise<void>((resolve) => {
      const off = w.on('outcome', () => {
        off();
        resolve();
      });
    });
  for (const _id of ['a', 'b']) {
    const settled = outcome();
    expect(await w.runOnce()).toBe(1);
    await settled;
  }
  expect(seen).toEqual(['first a', 'removed a', 'first b', 'added b']);
  await w.close({ timeout: 0 });
});
