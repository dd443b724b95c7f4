import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock, type Queue } from '../../src/broker/index.js';
import { QueueFullError } from '../../src/core/index.js';
import { type Engine, openEngine, type ScheduleRecord } from '../../src/engine/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';
import { inOwnPostgresDatabase } from '../engine/postgres-scratch.js';
import { call, startTestServer } from '../server/helpers.js';

// R25: a schedule that fails (its queue refuses the occurrence, or its times cannot be
// computed here) fails alone: the pass goes on to the others, and the loop still passes at
// their occurrences while it tries the failed one again after intervalMs.
// On PostgreSQL in a database of the file's own: a pass lists every schedule of the storage, and
// in the shared one other files' schedules would meet these failing ones.
const factories = engineFactories().map((factory) =>
  inOwnPostgresDatabase(factory, 'sched_failing'),
);
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

const T0 = Date.UTC(2026, 11, 5, 12);

/**
 * Schedule `a-zone` of `queue` in a time zone this process does not know, as a process whose
 * time zone data knows it (or another version) may have stored it.
 */
function unknownZone(queue: string): ScheduleRecord {
  return {
    queue,
    name: 'a-zone',
    cron: '0 * * * *',
    every: undefined,
    timezone: 'Nowhere/Land',
    payload: undefined,
    createdAt: T0,
    lastAt: null,
  };
}

describe.each(factories)('R25 a failing schedule, on $name', (factory) => {
  async function withBroker(
    use: (on: { clock: ManualClock; engine: Engine; broker: EngineBroker }) => Promise<void>,
  ): Promise<void> {
    const clock = new ManualClock(T0);
    const engine = await factory.open();
    const broker = new EngineBroker(engine, { clock });
    try {
      await use({ clock, engine, broker });
    } finally {
      await broker.close();
    }
  }

  /** A queue of its own, deleted after `use`. */
  async function withQueue(
    broker: EngineBroker,
    label: string,
    use: (queue: Queue) => Promise<void>,
    options: { maxLength?: number } = {},
  ): Promise<void> {
    const name = queueName(label);
    const queue = await broker.queue(name, options);
    try {
      await use(queue);
    } finally {
      await broker.deleteQueue(name);
    }
  }

  it('R25 a stored schedule whose times cannot be computed is listed with its problem, beside the others', async () => {
    await withBroker(async ({ engine, broker }) => {
      await withQueue(broker, 'sched-list', async (queue) => {
        await engine.putSchedule(unknownZone(queue.name));
        await queue.schedule('tick', 1000);
        const [odd, tick] = await queue.schedules();
        expect(odd).toMatchObject({ name: 'a-zone', nextAt: Number.MAX_SAFE_INTEGER });
        expect(odd?.problem).toMatch(/^its times cannot be computed here: /);
        expect(tick).toMatchObject({ name: 'tick', nextAt: T0 + 1000 });
        expect(tick?.problem).toBeUndefined();
      });
    });
  });

  it('R25 a stored schedule whose time zone this process does not know fails alone, named, and the others publish', async () => {
    await withBroker(async ({ clock, engine, broker }) => {
      await withQueue(broker, 'sched-zone', async (queue) => {
        // As a process whose time zone data knows the zone (or another version) stored it;
        // listed before the other schedule of the queue.
        await engine.putSchedule(unknownZone(queue.name));
        await queue.schedule('tick', 1000);
        clock.set(T0 + 1000);
        const scheduler = broker.scheduler();
        const failed = await scheduler.runOnce().catch((error: unknown) => error);
        expect(failed).toBeInstanceOf(AggregateError);
        expect((failed as AggregateError).message).toContain(`${queue.name}/a-zone`);
        expect((failed as AggregateError).errors).toHaveLength(1);
        expect((await queue.inspect()).ready).toEqual(['tick@2026-12-05T12:00:01.000Z']);
        const onError = vi.fn();
        scheduler.start(onError);
        try {
          await vi.waitFor(() =>
            expect(onError).toHaveBeenCalledWith(expect.anything(), {
              queue: queue.name,
              name: 'a-zone',
            }),
          );
          await vi.waitFor(() => expect(clock.waiting).toBe(1));
          clock.set(T0 + 2000);
          await vi.waitFor(async () => expect((await queue.stats()).ready).toBe(2));
        } finally {
          await scheduler.stop();
        }
      });
    });
  });

  it('R25 while a schedule fails, the loop still passes at the occurrences of the others, and tries it again after intervalMs', async () => {
    await withBroker(async ({ clock, broker }) => {
      await withQueue(
        broker,
        'sched-full',
        async (full) => {
          await withQueue(broker, 'sched-other', async (other) => {
            await full.publish({ id: 'filler', payload: 0 });
            await full.schedule('tick', 1000);
            await other.schedule('tick', 1000);
            const onError = vi.fn();
            const scheduler = broker.scheduler({ intervalMs: 10_000 });
            scheduler.start(onError);
            try {
              for (let k = 1; k <= 4; k++) {
                // The loop asleep on the clock after its pass: moved before the loop computed its
                // sleep, the clock would be at or past the next occurrence then, and the loop
                // would sleep the least gap between passes, which this clock, moved by the test
                // alone, never ends.
                await vi.waitFor(() => expect(clock.waiting).toBe(1));
                clock.set(T0 + k * 1000);
                await vi.waitFor(async () => expect((await other.stats()).ready).toBe(k));
              }
              // Refused at +1000, then held back until the interval has passed.
              expect(onError.mock.calls).toEqual([
                [expect.any(QueueFullError), { queue: full.name, name: 'tick' }],
              ]);
              await vi.waitFor(() => expect(clock.waiting).toBe(1));
              clock.set(T0 + 11_000);
              await vi.waitFor(() => expect(onError).toHaveBeenCalledTimes(2));
              await vi.waitFor(async () => expect((await other.stats()).ready).toBe(5));
            } finally {
              await scheduler.stop();
            }
            expect((await other.inspect()).ready).toEqual([
              'tick@2026-12-05T12:00:01.000Z',
              'tick@2026-12-05T12:00:02.000Z',
              'tick@2026-12-05T12:00:03.000Z',
              'tick@2026-12-05T12:00:04.000Z',
              'tick@2026-12-05T12:00:11.000Z',
            ]);
          });
        },
        { maxLength: 1 },
      );
    });
  });
});

describe('R25 a schedule whose times cannot be computed, over HTTP', () => {
  it('GET …/schedules answers 200 with its problem', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-sched-problem-'));
    const url = `sqlite:${join(dir, 'q.db')}`;
    try {
      const engine = await openEngine(url);
      await engine.queue('odd');
      await engine.putSchedule(unknownZone('odd'));
      await engine.close();
      const server = await startTestServer({ url });
      try {
        const answer = await call(server.baseUrl, 'GET', '/v1/queues/odd/schedules');
        expect(answer.status).toBe(200);
        expect(answer.body.schedules[0]).toMatchObject({
          name: 'a-zone',
          nextAt: Number.MAX_SAFE_INTEGER,
          problem: expect.stringMatching(/^its times cannot be computed here: /),
        });
      } finally {
        await server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
