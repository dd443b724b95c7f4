import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { TOKEN_BLOCK } from '../../src/engine/sql/token-block.js';
import { withPostgresClient } from '../crash/postgres.js';
import { schemaUrl, usePostgresSchema } from './scaling-helpers.js';

/**
 * R6, R7 on PostgreSQL across a restore: a logical backup (pg_dump) copies every table, the
 * unlogged marker that says no commit was lost included, into tables made anew. Tokens reserved
 * after the backup was taken must not be handed out again by the restored database from its
 * first reservation on: it goes on above the marks, as after a crash (and as a copy of a SQLite
 * file in use does). The tests run in a schema of their own (through search_path).
 */
const SCHEMA = `leaseq_restore_${process.pid}`;
const url = schemaUrl(SCHEMA);
const skipReason = usePostgresSchema(SCHEMA);

function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  return withPostgresClient(work, url);
}

type Row = Record<string, unknown>;

/** The rows a backup taken now would hold of one queue and one of its jobs. */
async function backup(queue: string, id: string): Promise<{ job: Row; queue: Row }> {
  return admin(async (client) => ({
    job: (await client.query('SELECT * FROM leaseq_jobs WHERE queue = $1 AND id = $2', [queue, id]))
      .rows[0] as Row,
    queue: (await client.query('SELECT * FROM leaseq_queues WHERE name = $1', [queue]))
      .rows[0] as Row,
  }));
}

/**
 * What restoring that backup does: the job and queue rows as they were, and the tables made
 * anew with the backup's rows, the marker table's among them.
 */
async function restore(queue: string, id: string, saved: { job: Row; queue: Row }): Promise<void> {
  await admin(async (client) => {
    const job = saved.job;
    await client.query(
      `UPDATE leaseq_jobs SET state = $1, token = $2, delivered_at = $3, deadline = $4,
         delivery_count = $5, ready_pos = $6 WHERE queue = $7 AND id = $8`,
      [
        job.state,
        job.token,
        job.delivered_at,
        job.deadline,
        job.delivery_count,
        job.ready_pos,
        queue,
        id,
      ],
    );
    const row = saved.queue;
    await client.query(
      `UPDATE leaseq_queues SET clock = $1, next_token = $2, token_high_water = $3, ready_head = $4,
         ready_count = $5, active_count = $6, counters = $7, next_event_at = $8 WHERE name = $9`,
      [
        row.clock,
        row.next_token,
        row.token_high_water,
        row.ready_head,
        row.ready_count,
        row.active_count,
        row.counters,
        row.next_event_at,
        queue,
      ],
    );
    await client.query('CREATE UNLOGGED TABLE leaseq_alive_restored (LIKE leaseq_alive)');
    await client.query('INSERT INTO leaseq_alive_restored SELECT * FROM leaseq_alive');
    await client.query('DROP TABLE leaseq_alive');
    await client.query('ALTER TABLE leaseq_alive_restored RENAME TO leaseq_alive');
  });
}

describe('R7 PostgreSQL: a restored database never hands out again a token reserved after its backup', () => {
  it('a clean reopen goes on with the next token, with no gap', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    const queue = await engine.queue('steady', { visibility: 1000 });
    await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
    expect((await queue.reserve(1)).map((delivery) => delivery.token)).toEqual([1]);
    await engine.close();
    const reopened = await openEngine(url);
    try {
      const again = await reopened.queue('steady');
      expect((await again.reserve(2)).map((delivery) => delivery.token)).toEqual([2]);
    } finally {
      await reopened.close();
    }
  });

  it('after a restore, the job reserved since the backup gets a token above the mark; the token it had is refused', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    const queue = await engine.queue('restored', { visibility: 60_000 });
    await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
    // Token 1 raises the mark a block ahead; the backup is taken after it.
    expect((await queue.reserve(1)).map((delivery) => delivery.id)).toEqual(['a']);
    const saved = await backup('restored', 'b');
    const [after] = await queue.reserve(2);
    expect(after).toMatchObject({ id: 'b', token: 2 });
    await engine.close();
    await restore('restored', 'b', saved);
    const reopened = await openEngine(url);
    try {
      const again = await reopened.queue('restored');
      expect(await again.stats(3)).toMatchObject({ ready: 1, active: 1 });
      const [fresh] = await again.reserve(3);
      expect(fresh).toMatchObject({ id: 'b', deliveryCount: 1 });
      expect(fresh?.token).toBe(2 + TOKEN_BLOCK);
      // A worker that kept token 2 from before the restore completes nothing.
      expect(await again.ack(4, 2)).toBe(false);
      expect(await again.ack(4, fresh?.token ?? 0)).toBe(true);
      // The delivery of the backup itself is still live and settles with its own token.
      expect(await again.ack(4, 1)).toBe(true);
    } finally {
      await reopened.close();
    }
  });

  it('a dump of a database before migration 0028, restored and upgraded, goes on above the mark too; later starts leave no gap', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    const queue = await engine.queue('earlier', { visibility: 60_000 });
    await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    expect((await queue.reserve(1)).map((delivery) => delivery.id)).toEqual(['a']);
    const saved = await backup('earlier', 'b');
    const [after] = await queue.reserve(2);
    expect(after).toMatchObject({ id: 'b', token: 2 });
    await engine.close();
    // The backup was of a database at migration 0027: its marker row names no table.
    await admin(async (client) => {
      await client.query('ALTER TABLE leaseq_alive DROP COLUMN table_oid');
      await client.query('DELETE FROM leaseq_schema WHERE version = 28');
    });
    await restore('earlier', 'b', saved);
    const upgraded = await openEngine(url);
    try {
      const again = await upgraded.queue('earlier');
      const [fresh] = await again.reserve(3);
      expect(fresh).toMatchObject({ id: 'b', deliveryCount: 1 });
      expect(fresh?.token).toBe(2 + TOKEN_BLOCK);
      expect(await again.ack(4, 2)).toBe(false);
    } finally {
      await upgraded.close();
    }
    const reopened = await openEngine(url);
    try {
      const [next] = await (await reopened.queue('earlier')).reserve(5);
      expect(next).toMatchObject({ id: 'c', token: 3 + TOKEN_BLOCK });
    } finally {
      await reopened.close();
    }
  });
});
