import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** Publishes `ids` and rejects them in the order given: they die in that order. */
async function killInOrder(q: QueueHandle, ids: readonly string[], now = 0): Promise<void> {
  const sorted = [...ids].sort();
  // In batches a server takes (at most 100 entries each).
  for (let at = 0; at < sorted.length; at += 50) {
    await q.publishBatch(
      now,
      sorted.slice(at, at + 50).map((id) => ({ id })),
    );
  }
  const deliveries = await q.reserve(now, { max: ids.length });
  const tokenOf = new Map(deliveries.map((d) => [d.id, d.token]));
  for (const id of ids) {
    expect(
      await q.nack(now, tokenOf.get(id) as number, { requeue: false, reason: `bad ${id}` }),
    ).toBe(true);
  }
}

/** Every page, read with `limit`, as lists of ids. */
async function pages(q: QueueHandle, limit: number): Promise<string[][]> {
  const all: string[][] = [];
  let after: string | undefined;
  do {
    const page = await q.deadLetterPage({ limit, ...(after === undefined ? {} : { after }) });
    all.push(page.deadLetters.map((dead) => dead.id));
    after = page.next;
  } while (after !== undefined);
  return all;
}

describeEngines(engines, (h) => {
  describe('R34 dead letters in pages', () => {
    it('R34 pages follow the order of deaths, each after the last, and the last has no next', async () => {
      const q = await h.queue();
      await killInOrder(q, ['c', 'a', 'g', 'b', 'e', 'd', 'f']);
      expect(await pages(q, 3)).toEqual([['c', 'a', 'g'], ['b', 'e', 'd'], ['f']]);
      // A last page that is full still says no next: no empty page follows.
      expect(await pages(q, 7)).toEqual([['c', 'a', 'g', 'b', 'e', 'd', 'f']]);
      expect(await pages(q, 1)).toHaveLength(7);
      // The pages hold what deadLetters() holds, history and reason included.
      const first = await q.deadLetterPage({ limit: 2 });
      expect(first.deadLetters).toEqual((await q.deadLetters()).slice(0, 2));
      expect(first.deadLetters[0]).toMatchObject({ id: 'c', reason: 'bad c', deliveryCount: 1 });
    });

    it('R34 by default a page holds up to 100; an empty dead set is one empty page', async () => {
      const q = await h.queue();
      expect(await q.deadLetterPage()).toEqual({ deadLetters: [] });
      const ids = Array.from({ length: 101 }, (_, i) => `j${String(i).padStart(3, '0')}`);
      await killInOrder(q, ids);
      const page = await q.deadLetterPage();
      expect(page.deadLetters.map((dead) => dead.id)).toEqual(ids.slice(0, 100));
      expect(page.next).toEqual(expect.any(String));
      const rest = await q.deadLetterPage({ after: page.next });
      expect(rest).toEqual({ deadLetters: [expect.objectContaining({ id: 'j100' })] });
    });

    it('R34 R14 a cursor outlives the jobs it passed; a job that dies again comes after every page read', async () => {
      const q = await h.queue();
      await killInOrder(q, ['a', 'b', 'c', 'd', 'e']);
      const first = await q.deadLetterPage({ limit: 2 });
      expect(first.deadLetters.map((dead) => dead.id)).toEqual(['a', 'b']);
      // The jobs the cursor passed go: b is purged, a redriven and dead again.
      expect(await q.purge(1, ['b'])).toBe(1);
      expect(await q.redrive(1, ['a'])).toBe(1);
      const [again] = await q.reserve(1);
      expect(again?.id).toBe('a');
      expect(await q.nack(1, again?.token as number, { requeue: false })).toBe(true);
      const second = await q.deadLetterPage({ limit: 2, after: first.next });
      expect(second.deadLetters.map((dead) => dead.id)).toEqual(['c', 'd']);
      const third = await q.deadLetterPage({ limit: 2, after: second.next });
      expect(third).toEqual({
        deadLetters: [expect.objectContaining({ id: 'e' }), expect.objectContaining({ id: 'a' })],
      });
      expect((await q.deadLetters()).map((dead) => dead.id)).toEqual(['c', 'd', 'e', 'a']);
      // A cursor past every dead job reads an empty last page.
      await q.redrive(2);
      expect(await q.deadLetterPage({ after: second.next })).toEqual({ deadLetters: [] });
    });

    it('R34 a bad limit, cursor or option is a typed error and changes nothing', async () => {
      const q = await h.queue();
      await killInOrder(q, ['a', 'b']);
      const before = await q.inspect();
      for (const options of [
        { limit: 0 },
        { limit: 1001 },
        { limit: 1.5 },
        { limit: '3' },
        { after: 'x' },
        { after: '0' },
        { after: '-1' },
        { after: 2 },
        { after: '99999999999999999' },
        { limit: 2, cursor: '1' },
        [],
      ]) {
        const error = await q.deadLetterPage(options as never).catch((e: unknown) => e);
        expect(error, JSON.stringify(options)).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
      }
      expect(await q.inspect()).toEqual(before);
    });
  });
});
