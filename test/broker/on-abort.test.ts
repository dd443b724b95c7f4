import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { onAbort, untilAborted } from '../../src/broker/on-abort.js';

// Many calls waiting on one signal: the signal holds one listener for all of them.
describe('onAbort', () => {
  it('holds one listener on the signal however many wait, none once all are removed', () => {
    const controller = new AbortController();
    const removals = Array.from({ length: 50 }, () => onAbort(controller.signal, () => {}));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    for (const remove of removals) remove();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    // A removal twice changes nothing; a new listener after all were removed still fires.
    removals[0]?.();
    const calls: string[] = [];
    onAbort(controller.signal, () => calls.push('late'));
    controller.abort();
    expect(calls).toEqual(['late']);
  });

  it('calls each listener once, in the order added; a removed one is not called', () => {
    const controller = new AbortController();
    const calls: number[] = [];
    const removeSecond = onAbort(controller.signal, () => calls.push(2));
    onAbort(controller.signal, () => {
      calls.push(1);
      removeThird();
    });
    const removeThird = onAbort(controller.signal, () => calls.push(3));
    onAbort(controller.signal, () => calls.push(4));
    removeSecond();
    controller.abort();
    controller.abort();
    expect(calls).toEqual([1, 4]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('the same function added twice is two listeners, removed one at a time', () => {
    const controller = new AbortController();
    let count = 0;
    const listener = () => {
      count += 1;
    };
    const removeFirst = onAbort(controller.signal, listener);
    onAbort(controller.signal, listener);
    removeFirst();
    controller.abort();
    expect(count).toBe(1);
  });

  it('a listener that throws stops no other; its error is reported as uncaught', async () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const failure = new Error('listener failed');
    const reported = new Promise<unknown>((resolve) => {
      const listeners = process.listeners('uncaughtException');
      process.removeAllListeners('uncaughtException');
      process.once('uncaughtException', (error) => {
        for (const listener of listeners) process.on('uncaughtException', listener);
        resolve(error);
      });
    });
    onAbort(controller.signal, () => {
      throw failure;
    });
    onAbort(controller.signal, () => calls.push('after'));
    controller.abort();
    expect(calls).toEqual(['after']);
    expect(await reported).toBe(failure);
  });

  it('never calls a listener added to a signal already aborted (the caller checks first)', async () => {
    const controller = new AbortController();
    controller.abort();
    let called = false;
    const remove = onAbort(controller.signal, () => {
      called = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(called).toBe(false);
    remove();
  });
});

describe('untilAborted', () => {
  it('answers what the work resolves to while no signal aborted', async () => {
    expect(await untilAborted(Promise.resolve(7), [undefined, new AbortController().signal])).toBe(
      7,
    );
    await expect(untilAborted(Promise.reject(new Error('failed')), undefined)).rejects.toThrow(
      'failed',
    );
  });

  it('answers undefined once any of its signals aborts, and a later failure of the work is its own', async () => {
    const first = new AbortController();
    const second = new AbortController();
    let fail!: (error: Error) => void;
    const work = new Promise<number>((_resolve, reject) => {
      fail = reject;
    });
    const waiting = untilAborted(work, [first.signal, second.signal]);
    second.abort();
    expect(await waiting).toBeUndefined();
    // Unhandled, this would fail the run.
    fail(new Error('late'));
    await new Promise((resolve) => setImmediate(resolve));
  });

  it('answers undefined at once on a signal aborted already', async () => {
    const never = new Promise<number>(() => {});
    expect(await untilAborted(never, AbortSignal.abort())).toBeUndefined();
  });
});
