import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock, type Queue } from '../../src/broker/index.js';
import type { Engine, EngineTransaction } from '../../src/engine/engine.js';
import { openEngine } from '../../src/engine/index.js';
import { postgresSkipReason, withPostgresClient } from '../crash/postgres.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';
import { settlesWithin } from './settles-within.js';

// R25 on PostgreSQL: every transaction of a queue takes the queue's lock before its rows. A
// scheduler pass that recorded an occurrence (the schedule's row held) and then waited for the
// queue's lock to publish it deadlocked with a deletion of that queue, or a replace of one of
// its schedules, in another server: each holds the queue's lock, then waits for the schedule's
// row. PostgreSQL broke the cycle after deadlock_timeout (1 s) by rolling one back, which then
// ran again. One pass records the occurrences of several queues at once, holding their rows
// while it publishes into each in turn, so a change of any of those queues met it.

let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('pass_locks');
});

afterAll(async () => {
  await scratch?.drop();
});

const T0 = Date.UTC(2026, 11, 10, 12);

/** Holds the first publish into `queue` of `engine`'s transactions until `release()`. */
function holdFirstPublishInto(engine: Engine, queue: string) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reach: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  let first = true;
  const transaction = engine.transaction?.bind(engine);
  if (transaction === undefined) throw new Error('a SQL engine has transactions');
  engine.transaction = <T>(work: (tx: EngineTransaction) => Promise<T>) =>
    transaction((tx) => {
      const publish: EngineTransaction['publish'] = async (name, now, input) => {
        if (name === queue && first) {
          first = false;
          reach();
          await released;
        }
        return tx.publish(name, now, input);
      };
      return work(
        new Proxy(tx, {
          get: (target, key, receiver) =>
            key === 'publish' ? publish : Reflect.get(target, key, receiver),
        }),
      );
    });
  return { reached, release };
}

/** Resolves once a backend of `database` waits for a lock. */
async function someoneWaits(database: string): Promise<void> {
  for (let tries = 0; tries < 500; tries++) {
    const waiting = await withPostgresClient(async (client) => {
      const { rows } = await client.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`,
        [database],
      );
      return rows.length;
    });
    if (waiting > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no backend came to wait for a lock');
}

const changes = {
  deleted: (other: EngineBroker, queue: Queue) => other.deleteQueue(queue.name),
  'given another schedule': (_other: EngineBroker, queue: Queue) => queue.schedule('tick', 2_000),
};

describe('PostgreSQL: a queue changed by another server while a scheduler pass publishes', () => {
  const cases = [
    // Both due: one transaction records both, then publishes into the first, then the second.
    { pass: 'of two queues', queues: ['first', 'second'], hold: 'first' },
    // One due: its own transaction records it, then publishes it.
    { pass: 'of one queue', queues: ['only'], hold: 'only' },
  ];
  for (const { pass: label, queues, hold } of cases) {
    for (const [change, apply] of Object.entries(changes)) {
      it(`R25 a pass ${label}, its last queue ${change} meanwhile, waits for the change only, no deadlock`, async (context) => {
        if (skip !== undefined) return context.skip(skip);
        const database = scratch as ScratchDatabase;
        const clock = new ManualClock(T0);
        const scheduling = new EngineBroker(await openEngine(database.url()), { clock });
        const other = new EngineBroker(await openEngine(database.url()), { clock });
        // Names of this case only: a pass lists every schedule of the storage.
        const names = queues.map((queue) => `${queue}-${change.replaceAll(' ', '-')}`);
        try {
          for (const name of names) await (await scheduling.queue(name)).schedule('tick', 1_000);
          const changed = await other.queue(names.at(-1) as string);
          clock.advance(1_000);
          const { reached, release } = holdFirstPublishInto(
            scheduling.engine,
            `${hold}-${change.replaceAll(' ', '-')}`,
          );
          const pass = scheduling.scheduler().runOnce();
          // The pass has recorded its occurrences and publishes: another server changes a queue.
          await reached;
          const changing = apply(other, changed);
          await someoneWaits(database.name);
          release();
          // Each waits for the other's transaction, not for a deadlock's timeout.
          expect(await settlesWithin(Promise.all([pass, changing]), 700)).toBe(true);
          expect((await pass).map((occurrence) => occurrence.queue)).toEqual(names);
        } finally {
          await scheduling.close();
          await other.close();
        }
      });
    }
  }
});
