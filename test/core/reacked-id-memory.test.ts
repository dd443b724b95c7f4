import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';

/**
 * R4: an id acked again and again while an id acked earlier under a longer window is still
 * remembered (the window was lowered since) is remembered once, for its latest ack: the queue
 * does not keep a record of every ack.
 */

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Publishes `id` in group `g`, reserves it and acks it, all at `now`: its group sequence number. */
function ackOne(q: LeaseQueue, now: number, id: string): number {
  const published = q.publish(now, { id, group: 'g' });
  expect(published.duplicate).toBe(false);
  const [delivery] = q.reserve(now);
  expect(q.ack(now, delivery?.token as number)).toBe(true);
  return published.groupSeq as number;
}

describe('R4 an id acked again behind a longer window', () => {
  it('150,000 acks of one id hold no more memory than one', () => {
    const q = new LeaseQueue({ visibility: 1_000, dedupWindow: 1_000_000_000 });
    ackOne(q, 0, 'first'); // remembered for a long time
    q.reconfigure({ dedupWindow: 1 });
    let now = 1;
    for (; now <= 1_000; now += 2) ackOne(q, now, 'daily');
    gc();
    const before = process.memoryUsage().heapUsed;
    let seq = 0;
    for (; now <= 300_000; now += 2) seq = ackOne(q, now, 'daily');
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // A record of each ack kept behind the first one: 150,000 held 9 MB.
    expect(grown, `${Math.round(grown / 1e3)} kB`).toBeLessThan(2e6);
    // Still refused for its window, with the group seq of its latest ack; then free.
    const acked = now - 2;
    expect(q.publish(acked, { id: 'daily' })).toEqual({
      id: 'daily',
      duplicate: true,
      groupSeq: seq,
    });
    expect(q.publish(acked + 1, { id: 'daily' })).toMatchObject({ duplicate: false });
    expect(q.publish(acked + 1, { id: 'first' })).toMatchObject({ duplicate: true });
  });
});
