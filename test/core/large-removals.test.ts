import { describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';

/**
 * Cancels from inside long lists, and redrives of the cancelled jobs, on lists long enough that
 * the ready list and the group queues drop the passed slots and rebuild without removed jobs
 * (over 1,024 of each): the order, the counts and the oldest-ready age stay those of R24, R28.
 */

/** Reserves and acks one job at a time at `now` until none is ready: the ids in order. */
function drain(q: LeaseQueue, now: number): string[] {
  const ids: string[] = [];
  for (let [delivery] = q.reserve(now); delivery !== undefined; [delivery] = q.reserve(now)) {
    ids.push(delivery.id);
    expect(q.ack(now, delivery.token)).toBe(true);
  }
  return ids;
}

const ids = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `j${from + i}`);

describe('R24 R28 removals from inside long lists', () => {
  it('a group of 5,000 goes on in group order after members cancelled from inside and redriven', () => {
    const q = new LeaseQueue({ visibility: 1_000_000 });
    q.publishBatch(
      0,
      ids(0, 5_000).map((id) => ({ id, group: 'g' })),
    );
    // Two of every three waiting members (not the first, which is ready) die cancelled.
    const cancelled = ids(1, 5_000).filter((_, i) => i % 3 !== 0);
    for (const id of cancelled) expect(q.cancel(1, id)).toBe(true);
    const stayed = ['j0', ...ids(1, 5_000).filter((_, i) => i % 3 === 0)];
    expect(q.stats(1).waiting).toBe(stayed.length - 1);
    // Some come back: each joins the back of the group, behind the ones that stayed.
    const back = cancelled.filter((_, i) => i % 5 === 0);
    expect(q.redrive(2, back)).toBe(back.length);
    expect(q.inspect().waiting).toEqual([...stayed.slice(1), ...back]);
    expect(q.job(back[0] as string)?.state).toBe('waiting');
    // One of those leaves again with remove, and the last one that stayed too.
    q.cancel(3, back[1] as string, { remove: true });
    q.cancel(3, stayed.at(-1) as string, { remove: true });
    const order = [...stayed.slice(0, -1), back[0], ...back.slice(2)];
    expect(q.stats(3).waiting).toBe(order.length - 1);
    expect(drain(q, 4)).toEqual(order);
    expect(q.stats(4)).toMatchObject({ ready: 0, waiting: 0, active: 0 });
  });

  it('a ready list of 5,000 keeps its order, counts and oldest-ready age through cancels from inside', () => {
    const q = new LeaseQueue({ visibility: 1_000_000 });
    const number = (id: string) => Number(id.slice(1));
    const ranked = (id: string) => number(id) % 10 === 0;
    // Published at ticks 0..4, a thousand each; one in ten with priority 5.
    for (let tick = 0; tick < 5; tick++) {
      q.publishBatch(
        tick,
        ids(tick * 1_000, (tick + 1) * 1_000).map((id) => ({ id, priority: ranked(id) ? 5 : 0 })),
      );
    }
    // Three put back at the front of their priority at tick 5 (R9).
    const taken = q.reserve(5, { max: 3 }).map((delivery) => {
      q.nack(5, delivery.token);
      return delivery.id;
    });
    const readySince = (id: string) => (taken.includes(id) ? 5 : Math.floor(number(id) / 1_000));
    const age = (left: string[], now: number) => now - Math.min(...left.map(readySince));
    const before = q.inspect().ready;
    // Each nacked one went ahead of the one nacked before it.
    expect(before.slice(0, 3)).toEqual([...taken].reverse());

    // Two of every three, from anywhere in either priority.
    const gone = before.filter((_, i) => i % 3 !== 0);
    for (const id of gone) expect(q.cancel(6, id)).toBe(true);
    let left = before.filter((_, i) => i % 3 === 0);
    expect(q.inspect().ready).toEqual(left);
    expect(q.stats(10)).toMatchObject({ ready: left.length, oldestReadyAge: age(left, 10) });

    // Then every job left of ticks 0 and 1 but the first, which held the oldest-ready age.
    const older = left.filter((id, i) => i > 0 && readySince(id) < 2);
    for (const id of older) q.cancel(11, id);
    left = left.filter((id) => !older.includes(id));
    expect(q.stats(12)).toMatchObject({ ready: left.length, oldestReadyAge: age(left, 12) });
    expect(q.cancel(12, left[0] as string)).toBe(true);
    left = left.slice(1);
    expect(q.stats(13)).toMatchObject({ ready: left.length, oldestReadyAge: age(left, 13) });

    // Redriven, cancelled jobs join the back of their priority, in the order named (R14).
    const redriven = [...gone.slice(0, 40), ...older.slice(0, 40)];
    expect(q.redrive(14, redriven)).toBe(redriven.length);
    const expected = [
      ...left.filter(ranked),
      ...redriven.filter(ranked),
      ...left.filter((id) => !ranked(id)),
      ...redriven.filter((id) => !ranked(id)),
    ];
    expect(q.inspect().ready).toEqual(expected);
    expect(drain(q, 15)).toEqual(expected);
  });
});
