import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { openEngine } from '../../src/engine/index.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';
import { settlesWithin } from './settles-within.js';

/**
 * R25 on PostgreSQL: a scheduler passes over a schedule whose row another transaction holds
 * (another scheduler publishing that occurrence, a replace of it) rather than wait for it, so
 * that schedulers over one database do not take the schedules in turn; the occurrence stays
 * due for a later pass.
 */
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('schedule_locks');
});

afterAll(async () => {
  await scratch?.drop();
});

const T0 = Date.UTC(2026, 11, 6, 12);

describe('PostgreSQL: a schedule row another transaction holds', () => {
  it('R25 is passed over by a scheduler pass, which publishes the others, and published by a later pass once free', async (context) => {
    if (skip !== undefined) return context.skip(skip);
    if (scratch === undefined) throw new Error('no scratch database');
    const clock = new ManualClock(T0);
    const engine = await openEngine(scratch.url());
    const broker = new EngineBroker(engine, { clock });
    const holder = new pg.Client({ connectionString: scratch.url() });
    await holder.connect();
    try {
      const queue = await broker.queue('ticks');
      await queue.schedule('held', 1_000);
      await queue.schedule('free', 1_000);
      clock.advance(1_000);
      await holder.query('BEGIN');
      await holder.query(
        "SELECT 1 FROM leaseq_schedules WHERE queue = 'ticks' AND name = 'held' FOR UPDATE",
      );
      const scheduler = broker.scheduler();
      const pass = scheduler.runOnce();
      expect(await settlesWithin(pass, 3_000)).toBe(true);
      expect((await pass).map((occurrence) => occurrence.name)).toEqual(['free']);
      await holder.query('ROLLBACK');
      expect((await scheduler.runOnce()).map((occurrence) => occurrence.name)).toEqual(['held']);
      expect(await scheduler.runOnce()).toEqual([]);
      expect((await queue.stats()).ready).toBe(2);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await broker.close();
    }
  });
});
