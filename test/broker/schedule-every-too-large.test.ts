import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { ValidationError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';

// R25: an interval too large for its first occurrence to be a time a date can hold is refused
// by what it exceeds, the longest interval, however large it is: a whole number beyond 2^53 - 1
// is still one of at least 1000 ms, and a message saying it must be that would mislead.

const T0 = Date.UTC(2026, 11, 7, 12);
const LONGEST = 8.64e15 - T0;

describe('R25 an interval beyond the longest', () => {
  it.each([
    ['a safe integer', Number.MAX_SAFE_INTEGER],
    ['2 ** 60', 2 ** 60],
    ['1e300', 1e300],
    ['the largest number', Number.MAX_VALUE],
  ])(
    'R25 %s is refused as more than the longest interval, and nothing is stored',
    async (_label, every) => {
      const broker = new EngineBroker(await openEngine('memory:'), { clock: new ManualClock(T0) });
      try {
        const queue = await broker.queue('reports');
        const error = await queue.schedule('far', every).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).issues).toEqual([
          `every must be at most ${LONGEST} ms (its first occurrence a time a date can hold), got ${every}`,
        ]);
        expect(await queue.schedules()).toEqual([]);
      } finally {
        await broker.close();
      }
    },
  );

  it('R25 a number that is not whole, or under 1000, is still refused as not an interval', async () => {
    const broker = new EngineBroker(await openEngine('memory:'), { clock: new ManualClock(T0) });
    try {
      const queue = await broker.queue('reports');
      for (const every of [999, 1000.5, Number.POSITIVE_INFINITY, Number.NaN]) {
        const error = await queue.schedule('bad', every).catch((caught: unknown) => caught);
        expect((error as ValidationError).issues).toEqual([
          `every must be an integer of at least 1000 ms, got ${every}`,
        ]);
      }
      expect(await queue.schedules()).toEqual([]);
    } finally {
      await broker.close();
    }
  });
});
