import { describe, expect, it } from 'vitest';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R29 group sequence numbers', () => {
    it('R29 a grouped publish answers its groupSeq: larger for every later joiner of any group of the queue', async () => {
      const q = await h.queue({ visibility: 5 });
      const first = await q.publishBatch(0, [
        { id: 'a1', group: 'a' },
        { id: 'free' },
        { id: 'b1', group: 'b' },
        { id: 'a2', group: 'a', delay: 3, priority: 9 },
      ]);
      expect(first.map((result) => result.id)).toEqual(['a1', 'free', 'b1', 'a2']);
      expect(first[1]).toEqual({ id: 'free', duplicate: false });
      const seqs = [first[0], first[2], first[3]].map((result) => result?.groupSeq as number);
      for (const seq of seqs) expect(Number.isSafeInteger(seq) && seq >= 1).toBe(true);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      expect(new Set(seqs).size).toBe(3);
      const later = await q.publish(1, { id: 'b2', group: 'b' });
      expect(later.groupSeq).toBeGreaterThan(seqs[2] as number);
      // job(id) shows it, whatever the state: ready, waiting, active.
      expect(await q.job('a1')).toMatchObject({ group: 'a', groupSeq: seqs[0] });
      expect(await q.job('a2')).toMatchObject({ state: 'waiting', groupSeq: seqs[2] });
      expect(await q.job('free')).not.toHaveProperty('groupSeq');
      const [a1] = await q.reserve(1);
      expect(a1?.id).toBe('a1');
      expect(await q.job('a1')).toMatchObject({ state: 'active', groupSeq: seqs[0] });
    });

    it('R29 a duplicate answers the stored job’s groupSeq, and an acked one’s while its id is remembered', async () => {
      const q = await h.queue({ visibility: 5, dedupWindow: 10 });
      const original = await q.publish(0, { id: 'a', group: 'g' });
      const seq = original.groupSeq as number;
      expect(original).toEqual({ id: 'a', duplicate: false, groupSeq: seq });
      // Present (ready): the same number, whatever group the new publish names.
      expect(await q.publish(1, { id: 'a', group: 'other' })).toEqual({
        id: 'a',
        duplicate: true,
        groupSeq: seq,
      });
      expect(await q.publish(1, { id: 'a' })).toEqual({ id: 'a', duplicate: true, groupSeq: seq });
      // A duplicate within one batch answers the number the first one got.
      const batch = await q.publishBatch(1, [
        { id: 'b', group: 'g' },
        { id: 'b', group: 'g' },
      ]);
      expect(batch[1]).toEqual({ id: 'b', duplicate: true, groupSeq: batch[0]?.groupSeq });
      expect(batch[0]?.groupSeq).toBeGreaterThan(seq);
      // Acked: remembered for the window with its number; then a new job with a new number.
      const [delivery] = await q.reserve(2);
      expect(await q.ack(3, delivery?.token as number)).toBe(true);
      expect(await q.publish(12, { id: 'a', group: 'g' })).toEqual({
        id: 'a',
        duplicate: true,
        groupSeq: seq,
      });
      const again = await q.publish(13, { id: 'a', group: 'g' });
      expect(again.duplicate).toBe(false);
      expect(again.groupSeq).toBeGreaterThan(batch[0]?.groupSeq as number);
      // An ungrouped job has none, present or remembered.
      await q.publish(13, { id: 'plain' });
      expect(await q.publish(13, { id: 'plain', group: 'g' })).toEqual({
        id: 'plain',
        duplicate: true,
      });
    });

    it('R29 a redriven job rejoins its group with a new, larger groupSeq; an auto-acked one is remembered with its own', async () => {
      const q = await h.queue({ visibility: 5, dedupWindow: 100 });
      const a = await q.publish(0, { id: 'a', group: 'g' });
      const b = await q.publish(0, { id: 'b', group: 'g' });
      const [delivery] = await q.reserve(0);
      await q.nack(1, delivery?.token as number, { requeue: false });
      expect(await q.job('a')).toMatchObject({ state: 'dead', groupSeq: a.groupSeq });
      expect(await q.redrive(2, ['a'])).toBe(1);
      const redriven = (await q.job('a'))?.groupSeq as number;
      expect(redriven).toBeGreaterThan(b.groupSeq as number);
      expect(await q.inspect()).toMatchObject({ ready: ['b'], waiting: ['a'] });
      const [auto] = await q.reserve(3, { ack: 'auto' });
      expect(auto?.id).toBe('b');
      expect(await q.publish(4, { id: 'b', group: 'g' })).toEqual({
        id: 'b',
        duplicate: true,
        groupSeq: b.groupSeq,
      });
    });

    it('R29 a job arriving in another queue (R26) takes a groupSeq of that queue, larger than those before it there', async () => {
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName);
      h.deleteAfter(dlqName);
      const sourceName = h.deleteAfter(h.queueName('source'));
      const source = await h
        .engine()
        .queue(sourceName, { visibility: 5, deadLetterQueue: dlqName });
      const before = await dlq.publish(0, { id: 'there', group: 'g' });
      await source.publish(0, { id: 'a', group: 'g' });
      const [delivery] = await source.reserve(0);
      await source.nack(1, delivery?.token as number, { requeue: false });
      const moved = await dlq.job('a');
      expect(moved).toMatchObject({ state: 'waiting', group: 'g' });
      expect(moved?.groupSeq).toBeGreaterThan(before.groupSeq as number);
    });
  });
});
