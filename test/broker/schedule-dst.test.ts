import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { openEngine } from '../../src/engine/index.js';

// R25 across daylight saving time, as docs/http-api.md ("Periodic jobs") describes it: a fixed
// time runs once a day, even in the repeated hour; a list or range runs at each passing.

/** The occurrences each schedule publishes while the clock steps 5 minutes from `from` to `to`. */
async function occurrences(
  timezone: string,
  crons: Record<string, string>,
  from: string,
  to: string,
): Promise<Record<string, string[]>> {
  const clock = new ManualClock(Date.parse(from));
  const broker = new EngineBroker(await openEngine('memory:'), { clock });
  try {
    const queue = await broker.queue('dst');
    for (const [name, cron] of Object.entries(crons))
      await queue.schedule(name, cron, { timezone });
    const scheduler = broker.scheduler();
    const seen: Record<string, string[]> = Object.fromEntries(
      Object.keys(crons).map((name) => [name, []]),
    );
    while (clock.now() < Date.parse(to)) {
      clock.advance(5 * 60_000);
      for (const { name, at } of await scheduler.runOnce()) {
        seen[name]?.push(new Date(at).toISOString());
      }
    }
    return seen;
  } finally {
    await broker.close();
  }
}

describe('R25 schedules across daylight saving time', () => {
  it('R25 the day the clocks go back: a fixed time once, a list at each passing', async () => {
    const seen = await occurrences(
      'America/New_York',
      { fixed: '30 1 * * *', list: '0,30 1 * * *', range: '30 1-2 * * *' },
      '2025-11-02T03:00:00Z',
      '2025-11-02T09:00:00Z',
    );
    expect(seen).toEqual({
      fixed: ['2025-11-02T05:30:00.000Z'],
      list: [
        '2025-11-02T05:00:00.000Z',
        '2025-11-02T05:30:00.000Z',
        '2025-11-02T06:00:00.000Z',
        '2025-11-02T06:30:00.000Z',
      ],
      range: ['2025-11-02T05:30:00.000Z', '2025-11-02T06:30:00.000Z', '2025-11-02T07:30:00.000Z'],
    });
  });

  it('R25 the day the clocks go forward: a fixed time in the skipped hour at the first after it', async () => {
    const seen = await occurrences(
      'Europe/Paris',
      { fixed: '30 2 * * *', list: '0,30 2 * * *' },
      '2025-03-29T23:00:00Z',
      '2025-03-30T03:00:00Z',
    );
    // 03:00 CEST is 01:00 UTC; the list's times do not exist that day.
    expect(seen).toEqual({ fixed: ['2025-03-30T01:00:00.000Z'], list: [] });
  });
});
