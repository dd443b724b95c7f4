import { afterEach, describe, expect, it, vi } from 'vitest';
import { ForeignWriteWatch } from '../../src/engine/sql/foreign-write-watch.js';

afterEach(() => {
  vi.useRealTimers();
});

/** What better-sqlite3 throws while another process recovers the file after a crash. */
function busyRecovery(): Error {
  return Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY_RECOVERY' });
}

describe('ForeignWriteWatch: the version unreadable as a receiver begins to wait', () => {
  it('the wait begins all the same, and the first read that succeeds wakes the waiting queues', () => {
    vi.useFakeTimers();
    let version: number | 'busy' = 'busy';
    const woken: string[] = [];
    const watch = new ForeignWriteWatch(
      () => {
        if (version === 'busy') throw busyRecovery();
        return version;
      },
      (queue) => woken.push(queue),
      50,
    );
    let release: (() => void) | undefined;
    expect(() => {
      release = watch.watch('a');
    }).not.toThrow();
    // Still unreadable: nothing known, nothing woken yet.
    vi.advanceTimersByTime(50);
    expect(woken).toEqual([]);
    // Readable again: another process may have committed meanwhile, so the queue looks.
    version = 7;
    vi.advanceTimersByTime(50);
    expect(woken).toEqual(['a']);
    // From then on only a change wakes it.
    vi.advanceTimersByTime(200);
    expect(woken).toEqual(['a']);
    version = 8;
    vi.advanceTimersByTime(50);
    expect(woken).toEqual(['a', 'a']);
    release?.();
  });
});
