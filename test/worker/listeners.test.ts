import { afterEach, describe, expect, it } from 'vitest';
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

describe('closeOnSignals gives the signals back once the worker has closed', () => {
  const taken = () => process.listenerCount('SIGTERM') + process.listenerCount('SIGINT');

  it('after a close of its own, not by a signal', async () => {
    const w = await worker();
    await w.start();
    const before = taken();
    closeOnSignals(w);
    expect(taken()).toBe(before + 2);
    await w.close();
    expect(taken()).toBe(before);
  });

  it('after the close a signal began, once it is done, with onClosed called', async () => {
    const w = await worker();
    await w.start();
    const before = taken();
    const closed = new Promise<unknown>((resolve) => {
      closeOnSignals(w, { signals: ['SIGTERM'], onClosed: resolve });
    });
    expect(taken()).toBe(before + 1);
    process.emit('SIGTERM', 'SIGTERM');
    expect(await closed).toBeUndefined();
    expect(w.state).toBe('closed');
    expect(taken()).toBe(before);
  });

  it('for a worker closed already, none is taken', async () => {
    const w = await worker();
    await w.start();
    await w.close();
    const before = taken();
    const remove = closeOnSignals(w);
    expect(taken()).toBe(before);
    remove();
    expect(taken()).toBe(before);
  });
});
