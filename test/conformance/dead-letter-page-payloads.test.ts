import { describe, expect, it } from 'vitest';
import { type DeadLetter, ValidationError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** Payloads of every JSON kind, a large one and none (a job published without one). */
const JOBS = [
  { id: 'object', payload: { order: 7, lines: [1, 2, 3] } },
  { id: 'large', payload: { blob: 'x'.repeat(100_000) } },
  { id: 'text', payload: 'plain' },
  { id: 'zero', payload: 0 },
  { id: 'false', payload: false },
  { id: 'bare' },
];

/** Reserves every ready job of `q` and rejects each with a reason of its own. */
async function rejectAll(q: QueueHandle, now: number): Promise<void> {
  for (const delivery of await q.reserve(now, { max: JOBS.length })) {
    expect(
      await q.nack(now, delivery.token, { requeue: false, reason: `bad ${delivery.id}` }),
    ).toBe(true);
  }
}

function withoutPayload({ payload: _, ...letter }: DeadLetter): DeadLetter {
  return letter;
}

describeEngines(engines, (h) => {
  describe('R34 dead letter pages without payloads', () => {
    it('R34 R14 R26 payloads false answers the same pages, each dead letter less its payload', async () => {
      // Dead twice: rejected in the source, moved to its dead-letter queue with an origin
      // (R26), and rejected there too, so the listed letters carry an origin as well.
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName);
      const source = await h.engine().queue(h.queueName('src'), { deadLetterQueue: dlqName });
      await source.publishBatch(0, JOBS);
      await rejectAll(source, 1);
      await rejectAll(dlq, 2);

      const whole = await dlq.deadLetters();
      expect(whole.map((letter) => letter.id).sort()).toEqual(JOBS.map((job) => job.id).sort());
      expect(whole.find((letter) => letter.id === 'large')?.payload).toEqual(JOBS[1]?.payload);
      expect(whole[0]?.origin).toMatchObject({ reason: expect.stringMatching(/^bad /) });
      expect(whole[0]?.history).toHaveLength(2);

      // Page after page, with and without payloads: the same ids, cursors and fields.
      for (const limit of [2, 4, 6, 100]) {
        let after: string | undefined;
        let read = 0;
        do {
          const from = after === undefined ? {} : { after };
          const full = await dlq.deadLetterPage({ limit, ...from });
          const bare = await dlq.deadLetterPage({ limit, ...from, payloads: false });
          expect(await dlq.deadLetterPage({ limit, ...from, payloads: true })).toEqual(full);
          expect(full.deadLetters).toEqual(whole.slice(read, read + limit));
          expect(bare.next).toEqual(full.next);
          expect(bare.deadLetters).toEqual(full.deadLetters.map(withoutPayload));
          for (const letter of bare.deadLetters) expect(letter).not.toHaveProperty('payload');
          read += full.deadLetters.length;
          after = full.next;
        } while (after !== undefined);
        expect(read).toBe(JOBS.length);
      }
      // The default page, and an empty dead set, the same way.
      expect((await dlq.deadLetterPage({ payloads: false })).deadLetters).toEqual(
        whole.map(withoutPayload),
      );
      expect(await source.deadLetterPage({ payloads: false })).toEqual({ deadLetters: [] });
    });

    it('R34 a payloads option other than true or false is a typed error', async () => {
      const q = await h.queue();
      await q.publish(0, { id: 'a', payload: 1 });
      await rejectAll(q, 0);
      for (const payloads of ['false', 0, null, 1]) {
        const error = await q
          .deadLetterPage({ payloads } as never)
          .catch((e: unknown) => e as Error);
        expect(error, JSON.stringify(payloads)).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
        expect((error as ValidationError).message).toContain('payloads must be a boolean');
      }
    });
  });
});
