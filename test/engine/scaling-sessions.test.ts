import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import { PostgresConnection } from '../../src/engine/postgres/postgres-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { withPostgresClient } from '../crash/postgres.js';
import { temporaryDirectory } from '../temporary-directory.js';
import {
  genericPlans,
  type Seen,
  schemaUrl,
  sqlitePlan,
  statementsOf,
  usePostgresSchema,
} from './scaling-helpers.js';

/**
 * R16: at every step that time drives, each session's end (heartbeat or ack timeout) is read,
 * for the sessions it ends and for the queue's next event. That must cost one statement however
 * many sessions there are, each session one range of an index: it was a statement per session,
 * twice a step, each reading every job of the queue (SQLite) or filtering out every other live
 * delivery (PostgreSQL): a step of 400 sessions and 2,000 jobs took 1 s on SQLite, 3.4 s on
 * PostgreSQL, and held up every queue of the process meanwhile.
 */
const SESSION_ENDS = /SELECT [\s\S]*\blast_heartbeat\b|delivered_at \+/;
const SESSIONS = 30;

const dir = temporaryDirectory('leaseq-scaling-sessions-');
afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * SESSIONS sessions holding a delivery each, the first with an ack timeout of 50 (it ends at
 * 50), the others of 10,000; a backlog of ready jobs; and a session with a prefetch.
 */
async function openSessions(engine: Engine): Promise<{ queue: QueueHandle; prefetching: string }> {
  const queue = await engine.queue('sessions', { visibility: 30_000 });
  for (let index = 0; index < SESSIONS; index += 1) {
    const session = await queue.openSession(0, {
      timeout: 100_000,
      ackTimeout: index === 0 ? 50 : 10_000,
    });
    await queue.publish(0);
    expect(await queue.reserve(0, { session, max: 1 })).toHaveLength(1);
  }
  for (let batch = 0; batch < 4; batch += 1) {
    await queue.publishBatch(
      0,
      Array.from({ length: 500 }, () => ({})),
    );
  }
  const prefetching = await queue.openSession(0, { prefetch: 10 });
  // Another session's deliveries, whose ack timeout they do not trip (leases of 20).
  const other = await queue.openSession(0, { ackTimeout: 30 });
  expect(await queue.reserve(0, { session: other, max: 100, visibility: 20 })).toHaveLength(100);
  await queue.ackUpTo(0, other, Number.MAX_SAFE_INTEGER);
  return { queue, prefetching };
}

/** The step at 60: the first session ends by its ack timeout (R16), its delivery goes back. */
async function step(queue: QueueHandle): Promise<void> {
  const stats = await queue.stats(60);
  expect(stats.sessions).toBe(SESSIONS + 1);
  expect(stats.sessionReleases).toBe(1);
  expect(stats.active).toBe(SESSIONS - 1);
}

describe('R16 SQLite: a step reads when every session ends in one statement, through an index', () => {
  it('one statement a step, one range of leaseq_jobs_session_delivered a session', async () => {
    const engine = await openEngine(`sqlite:${join(dir, 'sessions.db')}`);
    try {
      const { queue, prefetching } = await openSessions(engine);
      const ends = await statementsOf(SqliteConnection, SESSION_ENDS, () => step(queue));
      expect(ends).toHaveLength(1);
      expect(sqlitePlan(ends[0] as Seen)).toContain(
        'SEARCH j USING COVERING INDEX leaseq_jobs_session_delivered (queue=? AND session=?)',
      );
      // A session's live deliveries, counted for its prefetch and released when it ends, are
      // found through its index too.
      const held = await statementsOf(
        SqliteConnection,
        /AND (j\.)?session = (\?|s\.id)/,
        async () => {
          expect(await queue.reserve(70, { session: prefetching, max: 20 })).toHaveLength(10);
          expect(await queue.closeSession(70, prefetching)).toBe(10);
        },
      );
      expect(held.length).toBeGreaterThanOrEqual(2);
      // The count a reserve bounds its take by, read with the session's row.
      const counted = held.filter(({ sql }) => sql.includes('j.session = s.id'));
      expect(counted).toHaveLength(1);
      expect(sqlitePlan(counted[0] as Seen)).toEqual([
        'SEARCH s USING PRIMARY KEY (queue=? AND id=?)',
        'CORRELATED SCALAR SUBQUERY 1',
        expect.stringMatching(
          /^SEARCH j USING (COVERING )?INDEX leaseq_jobs_session(_delivered)? \(queue=\? AND session=\?\)$/,
        ),
      ]);
      for (const statement of held.filter((seen) => !counted.includes(seen))) {
        expect(sqlitePlan(statement)).toEqual([
          expect.stringMatching(
            /^SEARCH leaseq_jobs USING (COVERING )?INDEX leaseq_jobs_session(_delivered)? \(queue=\? AND session=\?\)$/,
          ),
        ]);
      }
    } finally {
      await engine.close();
    }
  });
});

/** In a schema of its own (through search_path), since it gathers statistics of its tables. */
const SCHEMA = `leaseq_scaling_sessions_${process.pid}`;
const url = schemaUrl(SCHEMA);

describe('R16 PostgreSQL: a step reads when every session ends in one statement, through an index', () => {
  const skipReason = usePostgresSchema(SCHEMA);

  it('one statement a step, planned for any values through leaseq_jobs_session_delivered', async (context) => {
    const skip = skipReason();
    if (skip !== undefined) context.skip(skip);
    const engine = await openEngine(url);
    try {
      const { queue } = await openSessions(engine);
      await withPostgresClient((client) => client.query('ANALYZE'), url);
      const ends = await statementsOf(PostgresConnection, SESSION_ENDS, () => step(queue));
      expect(ends).toHaveLength(1);
      const [plan] = await genericPlans(ends, url);
      expect(plan).toMatch(
        /Index Only Scan using leaseq_jobs_session_delivered on leaseq_jobs j[^\n]*\n\s*Index Cond: \(\(queue = s\.queue\) AND \(session = s\.id\)\)/,
      );
    } finally {
      await engine.close();
    }
  });
});
