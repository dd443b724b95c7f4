import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';

/**
 * R28: a job cancelled with `remove` is gone, its payload with it: the ready list holds no more
 * removed jobs than it holds ready ones, however many are cancelled, and none cancelled from its
 * back (a job published, then cancelled).
 */

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Publishes a job whose payload is watched: the payload is held while the queue holds it. */
function publishWatched(q: LeaseQueue, now: number, id: string): WeakRef<object> {
  const payload = { id, data: new Array(1_000).fill(id) };
  q.publish(now, { id, payload });
  return new WeakRef(payload);
}

/** How many of the payloads are still held, after a garbage collection. */
async function held(payloads: WeakRef<object>[]): Promise<number> {
  // A WeakRef keeps its target for the rest of the turn it was made or read in.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return payloads.filter((payload) => payload.deref() !== undefined).length;
}

describe('R28 jobs cancelled with remove are not held', () => {
  it('300 cancelled from inside the ready list: no more are held than the 2 ready', async () => {
    const q = new LeaseQueue({ visibility: 1_000 });
    q.publish(0, { id: 'first' });
    const payloads = Array.from({ length: 300 }, (_, i) => publishWatched(q, 0, `j${i}`));
    q.publish(0, { id: 'last' });
    for (let i = 0; i < 300; i++) expect(q.cancel(1, `j${i}`, { remove: true })).toBe(true);
    expect(q.inspect().ready).toEqual(['first', 'last']);
    // All 300 were held until the queue was drained past them.
    expect(await held(payloads)).toBeLessThanOrEqual(2);
  });

  it('300 each published then cancelled behind a ready job: none held', async () => {
    const q = new LeaseQueue({ visibility: 1_000, paused: true });
    q.publish(0, { id: 'first' });
    const payloads: WeakRef<object>[] = [];
    for (let now = 1; now <= 300; now++) {
      payloads.push(publishWatched(q, now, `j${now}`));
      expect(q.cancel(now, `j${now}`, { remove: true })).toBe(true);
    }
    expect(await held(payloads)).toBe(0);
    expect(q.stats(300)).toMatchObject({ ready: 1, oldestReadyAge: 300 });
  });
});
