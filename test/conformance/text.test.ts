import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { expectRefusedUnchanged, expectRejection } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** Strings no engine can keep exactly as a column value: U+0000 and lone surrogates. */
const UNSTORABLE: [string, string][] = [
  ['U+0000', 'a\u0000b'],
  ['a lone high surrogate', '\ud800'],
  ['a lone low surrogate', '\udc00'],
  ['a reversed pair', 'x\udc00\ud800'],
];

/** Strings every engine keeps exactly: any well-formed text without U+0000. */
const STORABLE = ['😀 paired surrogates', 'tab\tand\nnewline', '\u0001\u001f\u007f', 'ü✓\uffff'];

describeEngines(engines, (h) => {
  describe('R18 text an engine stores', () => {
    it('R18 a job looked up by an id of no 1 to 256 characters (or not a string) is refused with a ValidationError, not a miss', async () => {
      const q = await h.queue();
      await q.publish(0, { id: '5' });
      for (const bad of ['', 'x'.repeat(257), 5, null, undefined]) {
        await expectRefusedUnchanged(
          q,
          () => q.job(bad as string),
          ValidationError,
          'INVALID_ARGUMENT',
        );
      }
      expect((await q.job('x'.repeat(256))) ?? 'missing').toBe('missing');
      expect((await q.job('5'))?.id).toBe('5');
    });

    for (const [label, bad] of UNSTORABLE) {
      it(`R18 a job id with ${label} is refused with a ValidationError on publish, batch, job, redrive and purge; nothing changes`, async () => {
        const q = await h.queue();
        await q.publish(0, { id: 'present', payload: { keep: bad } });
        await expectRefusedUnchanged(
          q,
          () => q.publish(1, { id: bad }),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        await expectRefusedUnchanged(
          q,
          () => q.publishBatch(1, [{ id: 'fine' }, { id: bad }]),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        await expectRefusedUnchanged(q, () => q.job(bad), ValidationError, 'INVALID_ARGUMENT');
        await expectRefusedUnchanged(
          q,
          () => q.redrive(1, [bad]),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        await expectRefusedUnchanged(
          q,
          () => q.purge(1, [bad]),
          ValidationError,
          'INVALID_ARGUMENT',
        );
      });

      it(`R18 a dead-letter reason with ${label} is refused with a ValidationError; nothing changes`, async () => {
        const q = await h.queue();
        await q.publish(0, { id: 'a' });
        const [delivery] = await q.reserve(0);
        const token = delivery?.token as number;
        await expectRefusedUnchanged(
          q,
          () => q.nack(1, token, { requeue: false, reason: bad }),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        const error = await expectRejection(
          () => q.reject(1, token, { requeue: false, reason: bad }),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(error.message).toContain('reason');
      });
    }

    it('R18 ids that differ only in their lone surrogates are never merged into one', async () => {
      const q = await h.queue();
      await expectRejection(
        () => q.publish(0, { id: '\ud800' }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      await expectRejection(
        () => q.publish(0, { id: '\udc00' }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect((await q.inspect()).ready).toEqual([]);
    });

    it('R18 well-formed ids and reasons without U+0000 are kept exactly', async () => {
      const q = await h.queue({ maxDeliveries: Number.POSITIVE_INFINITY });
      for (const id of STORABLE)
        expect(await q.publish(0, { id })).toEqual({ id, duplicate: false });
      expect((await q.inspect()).ready).toEqual(STORABLE);
      const deliveries = await q.reserve(1, { max: STORABLE.length });
      expect(deliveries.map((d) => d.id)).toEqual(STORABLE);
      for (const [index, delivery] of deliveries.entries()) {
        expect(await q.nack(2, delivery.token, { requeue: false, reason: STORABLE[index] })).toBe(
          true,
        );
      }
      expect((await q.deadLetters()).map((dead) => [dead.id, dead.reason])).toEqual(
        STORABLE.map((text) => [text, text]),
      );
      for (const id of STORABLE) expect((await q.job(id))?.id).toBe(id);
    });

    it('R18 payload strings are stored exactly, U+0000 and lone surrogates included', async () => {
      const q = await h.queue();
      const payload = {
        nul: 'a\u0000b',
        high: '\ud800',
        low: '\udc00',
        reversed: '\udc00\ud800',
        pair: '😀',
        '\u0000key\ud800': ['\udfff'],
      };
      await q.publish(0, { id: 'p', payload });
      expect((await q.job('p'))?.payload).toEqual(payload);
      const [delivery] = await q.reserve(1);
      expect(delivery?.payload).toEqual(payload);
      const high = (delivery?.payload as { high: string } | undefined)?.high ?? '';
      expect(high.charCodeAt(0)).toBe(0xd800);
      expect(high).toHaveLength(1);
    });
  });
});
