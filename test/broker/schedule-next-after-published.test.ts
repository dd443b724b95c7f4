import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

// R25: a schedule's nextAt is the next occurrence a scheduler publishes. Two servers over one
// storage, one with its clock two minutes behind the other's: the one ahead set a schedule or
// published an occurrence the other's clock has not reached. The server behind listed as next
// an occurrence already published, or one from before the schedule was set: neither is ever
// published.

const directory = temporaryDirectory('leaseq-sched-next-');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const SKEW = 2 * MINUTE;
const T0 = Date.UTC(2026, 11, 9, 12, 30);

/** An engine over the SQLite file `file`: two of one file are as two processes over it. */
const open = (file: string) => openEngine(`sqlite:${join(directory, file)}`);

describe('R25 nextAt listed by a server whose clock is behind, over one SQLite file', () => {
  /** Two brokers over one storage: `ahead`'s clock SKEW ahead of `behind`'s. */
  async function twoServers(
    file: string,
    use: (on: {
      ahead: EngineBroker;
      behind: EngineBroker;
      aheadClock: ManualClock;
      behindClock: ManualClock;
    }) => Promise<void>,
  ): Promise<void> {
    const aheadClock = new ManualClock(T0);
    const behindClock = new ManualClock(T0 - SKEW);
    const engines: Engine[] = [await open(file), await open(file)];
    const ahead = new EngineBroker(engines[0] as Engine, { clock: aheadClock });
    const behind = new EngineBroker(engines[1] as Engine, { clock: behindClock });
    try {
      await use({ ahead, behind, aheadClock, behindClock });
    } finally {
      await ahead.close();
      await behind.close();
    }
  }

  /** Both clocks forward by `ms`. */
  const advance = (clocks: ManualClock[], ms: number) => {
    for (const clock of clocks) clock.advance(ms);
  };

  it('R25 a cron occurrence the server ahead published is not listed as next: the one after it is', async () => {
    await twoServers('published.db', async ({ ahead, behind, aheadClock, behindClock }) => {
      await (await ahead.queue('reports')).schedule('hourly', '0 * * * *');
      // 13:00:05 ahead: it publishes 13:00. Behind, it is 12:58:05.
      advance([aheadClock, behindClock], HOUR / 2 + 5_000);
      expect((await ahead.scheduler().runOnce()).map(({ at }) => at)).toEqual([T0 + HOUR / 2]);
      const [listed] = await (await behind.queue('reports')).schedules();
      expect(listed).toMatchObject({ lastAt: T0 + HOUR / 2, nextAt: T0 + HOUR * 1.5 });
      // At 13:00:05 behind, its scheduler publishes nothing: 13:00 was not next.
      advance([aheadClock, behindClock], SKEW);
      expect(await behind.scheduler().runOnce()).toEqual([]);
    });
  });

  it('R25 a cron occurrence before the schedule was set by the server ahead is not listed as next', async () => {
    await twoServers('created.db', async ({ ahead, behind, aheadClock, behindClock }) => {
      // Set at 13:00:30 by the server ahead (12:58:30 behind): 13:00 is before it.
      advance([aheadClock, behindClock], HOUR / 2 + 30_000);
      const set = await (await ahead.queue('reports')).schedule('hourly', '0 * * * *');
      expect(set.nextAt).toBe(T0 + HOUR * 1.5);
      const [listed] = await (await behind.queue('reports')).schedules();
      expect(listed?.nextAt).toBe(T0 + HOUR * 1.5);
      advance([aheadClock, behindClock], SKEW);
      expect(await behind.scheduler().runOnce()).toEqual([]);
    });
  });

  it('R25 an interval occurrence the server ahead published is not listed as next', async () => {
    await twoServers('every.db', async ({ ahead, behind, aheadClock, behindClock }) => {
      await (await ahead.queue('pulses')).schedule('pulse', 3 * MINUTE);
      advance([aheadClock, behindClock], 3 * MINUTE);
      expect((await ahead.scheduler().runOnce()).map(({ at }) => at)).toEqual([T0 + 3 * MINUTE]);
      const [listed] = await (await behind.queue('pulses')).schedules();
      expect(listed).toMatchObject({ lastAt: T0 + 3 * MINUTE, nextAt: T0 + 6 * MINUTE });
    });
  });
});
