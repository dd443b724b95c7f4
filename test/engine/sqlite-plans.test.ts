import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { SQLITE_DIALECT } from '../../src/engine/sqlite/sqlite-engine.js';
import { temporaryDirectory } from '../temporary-directory.js';

const dir = temporaryDirectory('leaseq-sqlite-plans-');

/** Every statement SQLite connections prepare from now on, until `spy` is restored. */
function spyOnPrepare() {
  const prepared: string[] = [];
  const prepare = Database.prototype.prepare;
  const spy = vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (
    this: Database.Database,
    source: string,
  ) {
    prepared.push(source);
    return prepare.call(this, source);
  });
  return { prepared, spy };
}

describe('R17 SQLite: stats reads the age of the oldest ready job from one index entry', () => {
  it('the oldest ready job is the first entry of the queue in leaseq_jobs_ready_since, requeued jobs at the front included', async () => {
    const file = join(dir, 'oldest.db');
    const engine = await openEngine(`sqlite:${file}`);
    try {
      const queue = await engine.queue('oldest', { visibility: 30_000 });
      for (let batch = 0; batch < 3; batch += 1) {
        await queue.publishBatch(
          100 + batch,
          Array.from({ length: 500 }, () => ({})),
        );
      }
      // The front job is requeued later (R9): the oldest ready job is no longer at the front.
      const [front] = await queue.reserve(200, { max: 1 });
      await queue.nack(210, (front as { token: number }).token);
      expect((await queue.stats(300)).oldestReadyAge).toBe(200);
    } finally {
      await engine.close();
    }

    const db = new Database(file, { readonly: true });
    try {
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${SQLITE_DIALECT.oldestReadyOf('?')}`).all('oldest') as {
          detail: string;
        }[]
      ).map((row) => row.detail);
      // A search of the queue's range in the index, not a scan of its ready jobs.
      expect(plan).toEqual([
        'SEARCH leaseq_jobs USING COVERING INDEX leaseq_jobs_ready_since (queue=?)',
      ]);
      const [oldest] = db.prepare(SQLITE_DIALECT.oldestReadyOf('?')).all('oldest') as {
        since: number;
      }[];
      expect(oldest?.since).toBe(100);
    } finally {
      db.close();
    }
  });
});

describe('R17 SQLite: inspect and deliveries read the live deliveries by their token index', () => {
  it('the statements that list live deliveries search leaseq_jobs_token, not every job of the queue', async () => {
    const file = join(dir, 'active.db');
    const { prepared, spy } = spyOnPrepare();
    const engine = await openEngine(`sqlite:${file}`);
    try {
      const queue = await engine.queue('active', { visibility: 30_000 });
      await queue.publishBatch(
        100,
        Array.from({ length: 2000 }, () => ({})),
      );
      await queue.reserve(200, { max: 3 });
      prepared.length = 0;
      const view = await queue.inspect({ limit: 10 });
      expect(view.active.map((entry) => entry.token)).toEqual([1, 2, 3]);
      expect((await queue.deliveries()).map((entry) => entry.token)).toEqual([1, 2, 3]);
    } finally {
      spy.mockRestore();
      await engine.close();
    }
    const listing = prepared.filter((sql) => /state = 'active'\s+ORDER BY token/.test(sql));
    expect(listing.length).toBeGreaterThanOrEqual(2);
    const db = new Database(file, { readonly: true });
    try {
      for (const sql of listing) {
        const parameters = (sql.match(/\?/g) ?? []).map((_, index) =>
          index === 0 ? 'active' : 10,
        );
        const plan = (
          db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...parameters) as { detail: string }[]
        ).map((row) => row.detail);
        expect(plan).toEqual([
          'SEARCH leaseq_jobs USING INDEX leaseq_jobs_token (queue=? AND token>?)',
        ]);
      }
    } finally {
      db.close();
    }
  });
});

/** The queries run on SQLite connections while `action` runs, each with its parameters. */
async function queriesOf(action: () => Promise<unknown>): Promise<[string, SqlValue[]][]> {
  const queries: [string, SqlValue[]][] = [];
  const query = SqliteConnection.prototype.query;
  const spy = vi.spyOn(SqliteConnection.prototype, 'query').mockImplementation(function (
    this: SqliteConnection,
    sql: string,
    params: readonly SqlValue[] = [],
  ) {
    queries.push([sql, [...params]]);
    return query.call(this, sql, params) as never;
  });
  try {
    await action();
  } finally {
    spy.mockRestore();
  }
  return queries;
}

/** The plan of each dead-job listing in `queries`, read from `file`. */
function deadListingPlans(file: string, queries: [string, SqlValue[]][]): string[][] {
  const db = new Database(file, { readonly: true });
  try {
    return queries
      .filter(([sql]) => /state = 'dead'/.test(sql))
      .map(([sql, params]) =>
        (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map(
          (row) => row.detail,
        ),
      );
  } finally {
    db.close();
  }
}

/** `count` dead jobs with payloads of 20,000 characters in queue `name`. */
async function deadJobsIn(engine: Engine, name: string, count: number): Promise<QueueHandle> {
  const queue = await engine.queue(name);
  await queue.publishBatch(
    1,
    Array.from({ length: count }, (_, n) => ({ id: `dead-${n}`, payload: 'x'.repeat(20_000) })),
  );
  for (const delivery of await queue.reserve(2, { max: count })) {
    await queue.nack(2, delivery.token, { requeue: false, reason: 'bad' });
  }
  return queue;
}

const COVERED_PAGE = [
  'SEARCH leaseq_jobs USING COVERING INDEX leaseq_jobs_dead_letters (queue=? AND dead_seq>?)',
];

describe('R34 SQLite: a dead letter page without payloads reads one index, not the rows of its jobs', () => {
  it('the first page, the pages after a cursor and the dead list of inspect are ranges of leaseq_jobs_dead_letters alone', async () => {
    // Every column after the payload in a job row lies past the payload overflow pages: a page
    // that read the rows walked every payload to reach them (57 ms for 200 jobs of 200 KB).
    const file = join(dir, 'dead-page.db');
    const engine = await openEngine(`sqlite:${file}`);
    let pages: [string, SqlValue[]][];
    let inspected: [string, SqlValue[]][];
    try {
      const queue = await deadJobsIn(engine, 'dead-page', 25);
      pages = await queriesOf(async () => {
        const first = await queue.deadLetterPage({ limit: 10, payloads: false });
        const second = await queue.deadLetterPage({
          limit: 10,
          payloads: false,
          after: first.next as string,
        });
        expect(second.deadLetters.map((letter) => letter.id)).toEqual(
          Array.from({ length: 10 }, (_, n) => `dead-${n + 10}`),
        );
      });
      inspected = await queriesOf(async () => {
        expect((await queue.inspect({ limit: 5 })).dead).toHaveLength(5);
      });
    } finally {
      await engine.close();
    }
    const pagePlans = deadListingPlans(file, pages);
    // The first page (after 0) and the one after its cursor.
    expect(
      pages.filter(([sql]) => /state = 'dead'/.test(sql)).map(([, params]) => params[1]),
    ).toEqual([0, 10]);
    expect(pagePlans).toEqual([COVERED_PAGE, COVERED_PAGE]);
    expect(deadListingPlans(file, inspected)).toEqual([
      ['SEARCH leaseq_jobs USING COVERING INDEX leaseq_jobs_dead_letters (queue=?)'],
    ]);
  });

  it('a file made before the index gets it when opened, in place of leaseq_jobs_dead, its pages the same', async () => {
    const file = join(dir, 'dead-page-before.db');
    const engine = await openEngine(`sqlite:${file}`);
    const before = await deadJobsIn(engine, 'old', 12).then((queue) =>
      queue.deadLetterPage({ limit: 5, payloads: false }),
    );
    await engine.close();
    // The schema as the migrations before 0017 left it.
    const raw = new Database(file);
    raw.exec(`DROP INDEX leaseq_jobs_dead_letters;
      CREATE INDEX leaseq_jobs_dead ON leaseq_jobs (queue, dead_seq) WHERE state = 'dead';`);
    raw.prepare('DELETE FROM leaseq_schema WHERE version = 17').run();
    raw.close();

    const reopened = await openEngine(`sqlite:${file}`);
    let pages: [string, SqlValue[]][];
    try {
      const queue = await reopened.queue('old');
      pages = await queriesOf(async () => {
        expect(await queue.deadLetterPage({ limit: 5, payloads: false })).toEqual(before);
      });
    } finally {
      await reopened.close();
    }
    const after = new Database(file, { readonly: true });
    try {
      const indexes = after
        .prepare(
          "SELECT name FROM sqlite_master WHERE name IN ('leaseq_jobs_dead', 'leaseq_jobs_dead_letters')",
        )
        .all();
      expect(indexes).toEqual([{ name: 'leaseq_jobs_dead_letters' }]);
      expect(after.prepare('SELECT version FROM leaseq_schema WHERE version = 17').all()).toEqual([
        { version: 17 },
      ]);
    } finally {
      after.close();
    }
    expect(deadListingPlans(file, pages)).toEqual([COVERED_PAGE]);
  });
});

describe('SQLite: pruneInbox reads the entries it deletes, not every entry of the consumer', () => {
  it('the prune statement searches leaseq_inbox_processed by consumer and time, and deletes only the old entries', async () => {
    const file = join(dir, 'inbox.db');
    const { prepared, spy } = spyOnPrepare();
    const engine = await openEngine(`sqlite:${file}`);
    try {
      const transaction = engine.transaction?.bind(engine);
      if (transaction === undefined) throw new Error('the SQLite engine takes transactions');
      await transaction(async (tx) => {
        for (let index = 0; index < 500; index += 1) {
          await tx.claimOnce('ledger', `job-${index}`, 1000 + index);
        }
        await tx.claimOnce('other', 'job-0', 0);
      });
      prepared.length = 0;
      expect(await transaction((tx) => tx.pruneInbox('ledger', 1100))).toBe(100);
      expect(await transaction((tx) => tx.claimOnce('ledger', 'job-99', 2000))).toBe(true);
      expect(await transaction((tx) => tx.claimOnce('ledger', 'job-100', 2000))).toBe(false);
      expect(await transaction((tx) => tx.claimOnce('other', 'job-0', 2000))).toBe(false);
    } finally {
      spy.mockRestore();
      await engine.close();
    }
    const prune = prepared.filter((sql) => /DELETE FROM leaseq_inbox/.test(sql));
    expect(prune).toHaveLength(1);
    const db = new Database(file, { readonly: true });
    try {
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${prune[0]}`).all('ledger', 1100) as { detail: string }[]
      ).map((row) => row.detail);
      expect(plan).toEqual([
        'SEARCH leaseq_inbox USING INDEX leaseq_inbox_processed (consumer=? AND processed_at<?)',
      ]);
    } finally {
      db.close();
    }
  });
});
