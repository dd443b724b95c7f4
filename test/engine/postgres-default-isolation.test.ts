import { describe, expect, it } from 'vitest';
import { type Broker, open } from '../../src/index.js';
import { scratchDatabasesOfFile } from './postgres-scratch.js';

/**
 * A database (or a connection's URL) may make repeatable read or serializable the default
 * isolation of its transactions. leaseq's own work (its row locks, SKIP LOCKED, counters read
 * then written) assumes read committed, and must run at it whatever that default: a caller's
 * own transaction keeps the default, since it runs the caller's statements.
 */
const databases = scratchDatabasesOfFile('default_isolation');

type Isolation = 'repeatable read' | 'serializable';

/** A database of its own whose transactions default to `isolation`, by its setting or the URL. */
async function strictDatabase(isolation: Isolation, by: 'database' | 'url'): Promise<string> {
  const db = await databases.make();
  if (by === 'url') return db.url({ options: `-c default_transaction_isolation=${isolation}` });
  await db.admin(`ALTER DATABASE ${db.name} SET default_transaction_isolation = '${isolation}'`);
  return db.url();
}

/** Records the isolation level of every statement that writes leaseq_jobs. */
async function watchJobWrites(broker: Broker): Promise<void> {
  await broker.transaction(async (tx) => {
    await tx.run('CREATE TABLE isolation_seen (op TEXT NOT NULL, level TEXT NOT NULL)');
    await tx.run(`CREATE FUNCTION note_isolation() RETURNS TRIGGER LANGUAGE plpgsql AS $fn$
      BEGIN
        INSERT INTO isolation_seen VALUES (TG_OP, current_setting('transaction_isolation'));
        RETURN NULL;
      END $fn$`);
    await tx.run(`CREATE TRIGGER note_isolation AFTER INSERT OR UPDATE OR DELETE ON leaseq_jobs
      FOR EACH STATEMENT EXECUTE FUNCTION note_isolation()`);
  });
}

describe('PostgreSQL whose transactions default to a stricter isolation', () => {
  const cases: [Isolation, 'database' | 'url'][] = [
    ['repeatable read', 'database'],
    ['serializable', 'database'],
    ['serializable', 'url'],
  ];
  for (const [isolation, by] of cases) {
    it(`runs the calls of the engine at read committed and a transaction of the caller at ${isolation} (set by the ${by})`, async (context) => {
      const skip = databases.skip();
      if (skip !== undefined) context.skip(skip);
      const url = await strictDatabase(isolation, by);
      const broker = await open(url);
      try {
        const queue = await broker.queue('jobs');
        await watchJobWrites(broker);
        await queue.publish({ id: 'a' }); // a transaction
        await queue.publish({ id: 'b' });
        const [first] = await queue.receive(); // one statement (leaseq_reserve)
        expect(await queue.ack(first?.token ?? 0)).toBe(true); // one statement (leaseq_ack)
        const [second] = await queue.receive({ wait: 10 }); // leaseq_reserve_next
        expect(await queue.nack(second?.token ?? 0)).toBe(true); // a transaction
        const level = await broker.transaction(async (tx) => {
          const [row] = await tx.query<{ level: string }>(
            "SELECT current_setting('transaction_isolation') AS level",
          );
          return row?.level;
        });
        expect(level).toBe(isolation);
        const seen = await broker.transaction((tx) =>
          tx.query<{ op: string; level: string }>('SELECT op, level FROM isolation_seen'),
        );
        expect(new Set(seen.map((row) => row.op))).toEqual(new Set(['INSERT', 'UPDATE', 'DELETE']));
        expect(seen.filter((row) => row.level !== 'read committed')).toEqual([]);
      } finally {
        await broker.close();
      }
    });
  }

  for (const isolation of ['repeatable read', 'serializable'] as const) {
    it(`drains a queue through four brokers at once on a database at ${isolation}, every job acked once and no call failing`, async (context) => {
      const skip = databases.skip();
      if (skip !== undefined) context.skip(skip);
      const url = await strictDatabase(isolation, 'database');
      const jobs = 400;
      const brokers = await Promise.all([0, 1, 2, 3].map(() => open(url)));
      try {
        const queues = await Promise.all(brokers.map((broker) => broker.queue('drain')));
        const failures: string[] = [];
        const acked = new Map<string, number>();
        await Promise.all(
          queues.map(async (queue, index) => {
            for (let n = index; n < jobs; n += queues.length) {
              await queue.publish({ id: `j${n}` }).catch((error) => {
                failures.push(`publish: ${String(error)}`);
              });
            }
          }),
        );
        const stopAt = Date.now() + 30_000;
        await Promise.all(
          queues.flatMap((queue) =>
            [1, 2].map(async (max) => {
              while (acked.size < jobs && failures.length === 0 && Date.now() < stopAt) {
                try {
                  for (const job of await queue.receive({ max, wait: 50 })) {
                    if (await queue.ack(job.token)) {
                      acked.set(job.id, (acked.get(job.id) ?? 0) + 1);
                    }
                  }
                } catch (error) {
                  failures.push(String(error));
                }
              }
            }),
          ),
        );
        expect(failures).toEqual([]);
        expect(acked.size).toBe(jobs);
        expect([...acked.values()].every((count) => count === 1)).toBe(true);
        const stats = await (queues[0] as (typeof queues)[number]).stats();
        expect([stats.ready, stats.active, stats.published, stats.acks]).toEqual([
          0,
          0,
          jobs,
          jobs,
        ]);
      } finally {
        for (const broker of brokers) await broker.close();
      }
    });
  }
});
