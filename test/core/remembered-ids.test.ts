import { describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';

/** Publishes `id` in group `g`, reserves it and acks it, all at `now`: its group sequence number. */
function ackOne(q: LeaseQueue, now: number, id: string): number {
  const published = q.publish(now, { id, group: 'g' });
  expect(published.duplicate).toBe(false);
  const [delivery] = q.reserve(now);
  expect(delivery?.id).toBe(id);
  expect(q.ack(now, delivery?.token as number)).toBe(true);
  return published.groupSeq as number;
}

describe('R4 R29 acked ids are refused for their window, then free', () => {
  it('thousands of ids acked one a tick are each free again exactly when their window ends', () => {
    const q = new LeaseQueue({ visibility: 1_000, dedupWindow: 1_000 });
    const seqs: number[] = [];
    for (let tick = 0; tick < 3_000; tick++) seqs.push(ackOne(q, tick, `j${tick}`));
    // At 3,500: those acked by 2,500 are free, the later ones duplicates of their group seq.
    const at = 3_500;
    for (const tick of [0, 1_000, 2_500, 2_501, 2_999]) {
      const answer = q.publish(at, { id: `j${tick}`, group: 'h' });
      if (tick <= 2_500) expect(answer.duplicate).toBe(false);
      else expect(answer).toEqual({ id: `j${tick}`, duplicate: true, groupSeq: seqs[tick] });
    }
  });

  it('an id acked again after a lowered window is refused for its new window, with its new group seq', () => {
    const q = new LeaseQueue({ visibility: 1_000, dedupWindow: 100 });
    ackOne(q, 0, 'a'); // refused until 100
    q.reconfigure({ dedupWindow: 10 });
    ackOne(q, 1, 'b'); // refused until 11, remembered behind a
    expect(q.publish(5, { id: 'b' })).toMatchObject({ duplicate: true });
    q.reconfigure({ dedupWindow: 200 });
    const again = ackOne(q, 20, 'b'); // its window ended: acked again, refused until 220
    // At 100 a is forgotten, and the record of b's first ack with it: b's second one stays.
    expect(q.publish(100, { id: 'a' })).toMatchObject({ duplicate: false });
    expect(q.publish(150, { id: 'b' })).toEqual({ id: 'b', duplicate: true, groupSeq: again });
    expect(q.publish(220, { id: 'b' })).toMatchObject({ duplicate: false });
  });
});
