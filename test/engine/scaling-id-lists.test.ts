import { afterEach, describe, expect, it, vi } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { withPostgresClient } from '../crash/postgres.js';
import { genericPlans, schemaUrl, statementsOf, usePostgresSchema } from './scaling-helpers.js';

/**
 * R4: a publish with ids asks which of them the queue holds or remembers, and so do jobs
 * moved into a queue (R26); an ack on the general path deletes the jobs of its tokens. Each
 * must find what it names through the index, whatever the table's statistics say: written as
 * `IN` a list, with no statistics gathered since the backlog came, PostgreSQL read every job of
 * the queue for it (14 to 17 ms a publish at a backlog of 20,000, against 7 to 9).
 */
const BY_LIST =
  /^(SELECT id(, group_seq)? FROM leaseq_jobs WHERE queue = \? AND id|DELETE FROM leaseq_jobs WHERE queue = \? AND token)\b/;

/** In a schema of its own (through search_path), since it keeps its tables unanalyzed. */
const SCHEMA = `leaseq_scaling_id_lists_${process.pid}`;
const url = schemaUrl(SCHEMA);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('R4 PostgreSQL: lists of ids and tokens are looked up through the index', () => {
  const skipReason = usePostgresSchema(SCHEMA);

  it('planned for any values on tables never analyzed, a duplicate check and a general ack read only what they name', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      await withPostgresClient(async (client) => {
        // No ANALYZE may come while the test runs: the statistics stay as they were, none.
        await client.query('ALTER TABLE leaseq_jobs SET (autovacuum_enabled = false)');
        await client.query('ALTER TABLE leaseq_acked SET (autovacuum_enabled = false)');
      }, url);
      const backlog = await engine.queue('backlog', { visibility: 30_000, dedupWindow: 60_000 });
      for (let batch = 0; batch < 20; batch += 1) {
        await backlog.publishBatch(
          1,
          Array.from({ length: 1000 }, (_, index) => ({ id: `job-${batch}-${index}` })),
        );
      }
      await withPostgresClient(
        (client) =>
          client.query(
            `INSERT INTO leaseq_acked (queue, id, forget_at)
             SELECT 'backlog', 'acked-' || n, 60000 FROM generate_series(0, 19999) AS n`,
          ),
        url,
      );
      const source = await engine.queue('source', { visibility: 30_000 });
      const grouped = await engine.queue('grouped', { visibility: 30_000 });

      const seen = await statementsOf(PostgresConnection, BY_LIST, async () => {
        expect((await backlog.publish(2, { id: 'job-3-7' })).duplicate).toBe(true);
        expect((await backlog.publish(2, { id: 'acked-7' })).duplicate).toBe(true);
        expect((await backlog.publish(2, { id: 'new' })).duplicate).toBe(false);
        await source.publish(2, { id: 'arrives' });
        expect(await source.moveJobs(2, { ids: ['arrives'], to: 'backlog' })).toBe(1);
        // A job of a group is acked on the general path.
        await grouped.publish(2, { group: 'g' });
        const [delivery] = await grouped.reserve(2, { max: 1 });
        expect(await grouped.ack(2, (delivery as { token: number }).token)).toBe(true);
      });

      const reltuples = await withPostgresClient(async (client) => {
        const { rows } = await client.query(
          "SELECT reltuples::float8 AS rows FROM pg_class WHERE oid = 'leaseq_jobs'::regclass",
        );
        return Number((rows[0] as { rows: number }).rows);
      }, url);
      expect(reltuples).toBeLessThan(1000);
      expect((await backlog.job('arrives'))?.state).toBe('ready');
      const byId = seen.filter(({ sql }) => sql.startsWith('SELECT'));
      const byToken = seen.filter(({ sql }) => sql.startsWith('DELETE'));
      // Four publishes and the move; the ack.
      expect(byId).toHaveLength(5);
      expect(byToken).toHaveLength(1);

      for (const plan of await genericPlans(byId, url)) {
        expect(plan).not.toMatch(/Seq Scan on leaseq_(jobs|acked)/);
        expect(plan).toMatch(
          /(Index (Only )?Scan using|Bitmap Index Scan on) leaseq_jobs_pkey[^\n]*\n\s*Index Cond: \(\(queue = \$1\) AND \(id = /,
        );
        expect(plan).toMatch(
          /(Index (Only )?Scan using|Bitmap Index Scan on) leaseq_acked_pkey[^\n]*\n\s*Index Cond: \(\(queue = \$3\) AND \(id = /,
        );
      }
      for (const plan of await genericPlans(byToken, url)) {
        expect(plan).not.toMatch(/Seq Scan on leaseq_jobs/);
        expect(plan).toMatch(
          /(Index Scan using|Bitmap Index Scan on) leaseq_jobs_token[^\n]*\n\s*Index Cond: \(\(queue = \$1\) AND \(token = /,
        );
      }
    } finally {
      await engine.close();
    }
  }, 60_000);
});
