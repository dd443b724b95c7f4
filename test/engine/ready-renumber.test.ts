import { describe, expect, it } from 'vitest';
import { postgresEngineForFile } from './postgres-engine-for-file.js';
import { roundTrips } from './round-trips.js';

/**
 * Ready positions close up when jobs leave the middle of ready (a cancel, a move, expiry): in
 * one statement per priority band, not one per job moved or per gap. One per job or per gap
 * made a cancel in a queue of 40,000 ready jobs take 6 s, and the expiry of every other job of
 * 2,000 take 90 s, with every queue of the engine waiting (one transaction at a time).
 */
const N = 300;
const postgres = postgresEngineForFile('renumber');
const name = postgres.name;

describe('SQL engines: closing up ready positions costs statements per band, not per job', () => {
  it('R28 a cancel of a job in the middle of ready', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const queueName = name('cancel');
    const queue = await engine.queue(queueName);
    try {
      await queue.publishBatch(
        0,
        Array.from({ length: N }, (_, n) => ({ id: `j${n}` })),
      );
      const sent = await roundTrips(() => queue.cancel(1, `j${N / 2}`));
      expect(sent.length).toBeLessThan(20);
      const taken = await queue.reserve(2, { max: N });
      expect(taken.map((delivery) => delivery.id)).toEqual(
        Array.from({ length: N }, (_, n) => `j${n}`).filter((id) => id !== `j${N / 2}`),
      );
    } finally {
      await engine.deleteQueue(queueName);
    }
  });

  it('R28 a cancel near either end of ready moves only the jobs between it and that end', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const queueName = name('cancel-ends');
    const queue = await engine.queue(queueName);
    try {
      await queue.publishBatch(
        0,
        Array.from({ length: N }, (_, n) => ({ id: `j${n}` })),
      );
      const nearFront = await roundTrips(() => queue.cancel(1, 'j2'));
      const nearBack = await roundTrips(() => queue.cancel(1, `j${N - 3}`));
      // A range of the ready index, not the whole band renumbered (row_number over all of it).
      for (const sent of [nearFront, nearBack]) {
        expect(sent.filter((text) => /row_number/i.test(text))).toEqual([]);
      }
      expect(nearFront.some((text) => /ready_pos = ready_pos \+ 1/.test(text))).toBe(true);
      expect(nearBack.some((text) => /ready_pos = ready_pos - 1/.test(text))).toBe(true);
      const taken = await queue.reserve(2, { max: N });
      expect(taken.map((delivery) => delivery.id)).toEqual(
        Array.from({ length: N }, (_, n) => `j${n}`).filter(
          (id) => id !== 'j2' && id !== `j${N - 3}`,
        ),
      );
      expect(taken.map((delivery) => delivery.token)).toEqual(
        Array.from({ length: N - 2 }, (_, n) => n + 1),
      );
    } finally {
      await engine.deleteQueue(queueName);
    }
  });

  it('R30 the expiry of every other ready job, in one step', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const queueName = name('expiry');
    const queue = await engine.queue(queueName);
    try {
      await queue.publishBatch(
        0,
        Array.from({ length: N }, (_, n) => ({
          id: `j${n}`,
          ...(n % 2 === 1 ? { expiresAt: 10 } : {}),
        })),
      );
      const sent = await roundTrips(() => queue.stats(20));
      // Each expiring job costs its own few statements; closing the gaps costs one, not N / 2.
      expect(sent.length).toBeLessThan(N * 2);
      const updates = sent.filter((text) =>
        /ready_pos = ready_pos \+ 1|SET ready_pos = \?/.test(text),
      );
      expect(updates.length).toBeLessThanOrEqual(1);
      const taken = await queue.reserve(30, { max: N });
      expect(taken.map((delivery) => delivery.id)).toEqual(
        Array.from({ length: N / 2 }, (_, n) => `j${2 * n}`),
      );
    } finally {
      await engine.deleteQueue(queueName);
    }
  });

  it('R26 R24 moveJobs of a whole group looks at each job once, not once per member moved', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const from = name('group-from');
    const to = name('group-to');
    const source = await engine.queue(from);
    await engine.queue(to);
    const members = 60;
    try {
      await source.publishBatch(
        0,
        Array.from({ length: members }, (_, n) => ({ id: `g${n}`, group: 'g' })),
      );
      const ids = Array.from({ length: members }, (_, n) => `g${n}`);
      const sent = await roundTrips(async () => {
        expect(await source.moveJobs(1, { ids, to })).toBe(members);
      });
      // A few statements a member (its look-up, its move, its next member's turn), not a pass
      // over all of them per member (which made a group of 1,000 take minutes).
      expect(sent.length).toBeLessThan(members * 10);
    } finally {
      await engine.deleteQueue(from);
      await engine.deleteQueue(to);
    }
  });
});
