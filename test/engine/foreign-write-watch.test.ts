import { afterEach, describe, expect, it, vi } from 'vitest';
import { ForeignWriteWatch } from '../../src/engine/sql/foreign-write-watch.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('ForeignWriteWatch (SQLite shared by processes)', () => {
  it('reads the version only while a receiver waits, and wakes the waiting queues when it changes', () => {
    vi.useFakeTimers();
    let version = 7;
    let reads = 0;
    const woken: string[] = [];
    const watch = new ForeignWriteWatch(
      () => {
        reads += 1;
        return version;
      },
      (queue) => woken.push(queue),
      50,
    );
    vi.advanceTimersByTime(500);
    expect(reads).toBe(0);
    const releaseA = watch.watch('a');
    const releaseB = watch.watch('b');
    vi.advanceTimersByTime(100);
    expect(woken).toEqual([]);
    version = 8;
    vi.advanceTimersByTime(50);
    expect(woken).toEqual(['a', 'b']);
    releaseA();
    releaseA();
    version = 9;
    vi.advanceTimersByTime(50);
    expect(woken).toEqual(['a', 'b', 'b']);
    releaseB();
    const readsWhenIdle = reads;
    vi.advanceTimersByTime(1_000);
    expect(reads).toBe(readsWhenIdle);
  });
});
