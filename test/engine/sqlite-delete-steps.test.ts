import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { ClosedError } from '../../src/core/index.js';
import { type Engine, openEngine } from '../../src/engine/index.js';
import type { SqlValue } from '../../src/engine/sql/sql-connection.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { TurnCounter } from '../event-loop-turns.js';
import { temporaryDirectory } from '../temporary-directory.js';

/**
 * SQLite runs in this process: deleting or purging a queue of many jobs in one statement held
 * the event loop for as long (1.5 s for 300,000 jobs), so a server answered nothing else
 * meanwhile. The jobs go in steps of 1,000, the loop turning between two, in one transaction
 * still: committed whole, or, abandoned by a close, rolled back whole.
 */
const directory = temporaryDirectory('leaseq-delete-steps-');
let files = 0;

/** 2,498 jobs in queue `big` (10 of them in flight, 5 delayed, 2 dead) and one in `other`. */
async function filled(): Promise<{ engine: Engine; file: string }> {
  files += 1;
  const file = join(directory, `q${files}.db`);
  const engine = await openEngine(`sqlite:${file}`);
  const queue = await engine.queue('big', { visibility: 60_000, maxDeliveries: 1 });
  await queue.publishBatch(1, [
    { id: 'dead-1' },
    { id: 'dead-2' },
    ...Array.from({ length: 5 }, (_, n) => ({ id: `later-${n}`, delay: 60_000 })),
  ]);
  const [first, second] = await queue.reserve(2, { max: 2 });
  await queue.nack(3, first?.token ?? 0, { requeue: false });
  await queue.nack(3, second?.token ?? 0, { requeue: false });
  for (let at = 0; at < 2491; at += 500) {
    const count = Math.min(500, 2491 - at);
    await queue.publishBatch(
      4,
      Array.from({ length: count }, (_, n) => ({ id: `job-${at + n}`, payload: at + n })),
    );
  }
  await queue.reserve(5, { max: 10 });
  await (await engine.queue('other')).publishBatch(5, [{ id: 'job-1' }]);
  return { engine, file };
}

/**
 * Runs `action`, answering the turns of the event loop counted at each statement that deletes
 * jobs; `atStatement` runs at each of them, before it.
 */
async function turnsAtJobDeletes(
  action: () => Promise<unknown>,
  atStatement: (index: number) => void = () => {},
): Promise<number[]> {
  const loop = new TurnCounter();
  loop.start();
  const seen: number[] = [];
  const run = SqliteConnection.prototype.run;
  const spy = vi.spyOn(SqliteConnection.prototype, 'run').mockImplementation(function (
    this: SqliteConnection,
    sql: string,
    params: readonly SqlValue[] = [],
  ) {
    if (/^DELETE FROM leaseq_jobs\b/.test(sql)) {
      atStatement(seen.length);
      seen.push(loop.turns);
    }
    return run.call(this, sql, params);
  });
  try {
    await action();
  } finally {
    spy.mockRestore();
    loop.stop();
  }
  return seen;
}

/**
 * A queue `big` of `dead` dead jobs named `a-…` (their leases ran out, one delivery allowed),
 * then `live` ready ones named `b-…`, and `after` dead ones named `c-…`: the dead `a-` jobs come
 * first in the order of the key, the `c-` ones last.
 */
async function withDeadJobs(
  dead: number,
  live: number,
  after = 0,
): Promise<{ engine: Engine; file: string; now: number }> {
  files += 1;
  const file = join(directory, `q${files}.db`);
  const engine = await openEngine(`sqlite:${file}`);
  const queue = await engine.queue('big', { visibility: 60_000, maxDeliveries: 1 });
  let now = 1;
  const named = (prefix: string, count: number) =>
    Array.from({ length: count }, (_, n) => ({ id: `${prefix}-${String(n).padStart(5, '0')}` }));
  for (const [prefix, count] of [
    ['a', dead],
    ['c', after],
  ] as const) {
    for (let at = 0; at < count; at += 500) {
      await queue.publishBatch(now, named(prefix, count).slice(at, at + 500));
      await queue.reserve(now, { max: 500, visibility: 1 });
    }
  }
  now += 10;
  for (let at = 0; at < live; at += 500) {
    await queue.publishBatch(now, named('b', live).slice(at, at + 500));
  }
  expect(await queue.stats(now)).toMatchObject({ ready: live, dead: dead + after, active: 0 });
  return { engine, file, now };
}

/** The statements that read or delete jobs while `action` runs, with their parameters. */
async function jobStatements(
  action: () => Promise<unknown>,
): Promise<{ sql: string; params: readonly SqlValue[] }[]> {
  const seen: { sql: string; params: readonly SqlValue[] }[] = [];
  const spies = (['query', 'run'] as const).map((method) => {
    const original = SqliteConnection.prototype[method] as (
      this: SqliteConnection,
      sql: string,
      params?: readonly SqlValue[],
    ) => Promise<unknown>;
    return vi.spyOn(SqliteConnection.prototype, method).mockImplementation(function (
      this: SqliteConnection,
      sql: string,
      params: readonly SqlValue[] = [],
    ) {
      if (/^(DELETE|SELECT id) FROM leaseq_jobs\b/.test(sql)) seen.push({ sql, params });
      return original.call(this, sql, params);
    } as never);
  });
  try {
    await action();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return seen;
}

/** The loop turned between every two statements. */
function expectTurnsBetween(turns: readonly number[]): void {
  for (let step = 1; step < turns.length; step++) {
    expect(turns[step]).toBeGreaterThan(turns[step - 1] as number);
  }
}

function jobRows(file: string, queue: string): number {
  const db = new Database(file, { readonly: true });
  try {
    const row = db.prepare('SELECT count(*) AS n FROM leaseq_jobs WHERE queue = ?').get(queue);
    return (row as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('large queues on SQLite', () => {
  it('deleteQueue deletes the jobs in steps with turns of the event loop between them, all of them', async () => {
    const { engine, file } = await filled();
    try {
      const turns = await turnsAtJobDeletes(async () => {
        expect(await engine.deleteQueue('big')).toBe(true);
      });
      // 2,498 jobs: three steps of at most 1,000.
      expect(turns).toHaveLength(3);
      expectTurnsBetween(turns);
      expect((await engine.listQueues()).map((info) => info.name)).toEqual(['other']);
      const again = await engine.queue('big');
      expect(await again.stats(6)).toMatchObject({ ready: 0, active: 0, delayed: 0, dead: 0 });
      expect(await (await engine.queue('other')).stats(6)).toMatchObject({ ready: 1 });
    } finally {
      await engine.close();
    }
    expect(jobRows(file, 'big')).toBe(0);
  });

  it('purgeQueue removes the live jobs in steps with turns of the event loop between them, and keeps the dead', async () => {
    const { engine, file } = await filled();
    try {
      const queue = await engine.queue('big');
      let removed: unknown;
      const turns = await turnsAtJobDeletes(async () => {
        removed = await queue.purgeQueue(6);
      });
      expect(removed).toEqual({ ready: 2481, delayed: 5, active: 10, dead: 0 });
      expect(turns).toHaveLength(3);
      expectTurnsBetween(turns);
      expect(await queue.stats(7)).toMatchObject({ ready: 0, active: 0, delayed: 0, dead: 2 });
      expect((await queue.inspect()).dead.map((dead) => dead.id)).toEqual(['dead-1', 'dead-2']);
    } finally {
      await engine.close();
    }
    expect(jobRows(file, 'big')).toBe(2);
  });

  it('purgeQueue with the dead removes the dead jobs in steps with turns of the event loop between them too', async () => {
    const { engine, file, now } = await withDeadJobs(2500, 10);
    try {
      const queue = await engine.queue('big');
      let removed: unknown;
      const turns = await turnsAtJobDeletes(async () => {
        removed = await queue.purgeQueue(now, { dead: true });
      });
      expect(removed).toEqual({ ready: 10, delayed: 0, active: 0, dead: 2500 });
      // The 10 live jobs in one step, then the 2,500 dead in three.
      expect(turns).toHaveLength(4);
      expectTurnsBetween(turns.slice(1));
      expect(await queue.stats(now)).toMatchObject({ ready: 0, dead: 0, purged: 2510 });
    } finally {
      await engine.close();
    }
    expect(jobRows(file, 'big')).toBe(0);
  });

  it('purgeQueue reads on from where its step before ended, past the dead jobs ahead of the live ones', async () => {
    const { engine, file, now } = await withDeadJobs(1500, 2500, 20);
    try {
      const queue = await engine.queue('big');
      let removed: unknown;
      const statements = await jobStatements(async () => {
        removed = await queue.purgeQueue(now);
      });
      expect(removed).toEqual({ ready: 2500, delayed: 0, active: 0, dead: 0 });
      const deletes = statements.filter(({ sql }) => sql.startsWith('DELETE'));
      expect(deletes).toHaveLength(3);
      // Every statement after the first step starts at a live job (the last the step before
      // deleted), not again at the front of the queue, before its 1,500 dead jobs.
      const first = statements.indexOf(deletes[0] as (typeof statements)[number]);
      for (const { params } of statements.slice(first + 1)) {
        expect(params.some((value) => typeof value === 'string' && value.startsWith('b-'))).toBe(
          true,
        );
      }
      expect(await queue.stats(now)).toMatchObject({ ready: 0, dead: 1520 });
      const dead = (await queue.inspect()).dead.map((job) => job.id);
      expect(dead).toHaveLength(1520);
    } finally {
      await engine.close();
    }
    expect(jobRows(file, 'big')).toBe(1520);
  });

  it('a close whose signal aborts between the steps of a delete rolls it back whole, at the next step', async () => {
    const { engine, file } = await filled();
    const abort = new AbortController();
    let closing: Promise<void> | undefined;
    let deleted: unknown;
    const turns = await turnsAtJobDeletes(
      async () => {
        deleted = await engine.deleteQueue('big').catch((error: unknown) => error);
      },
      (index) => {
        if (index !== 1) return;
        closing = engine.close({ signal: abort.signal });
        abort.abort();
      },
    );
    await closing;
    expect(deleted).toBeInstanceOf(ClosedError);
    // Cut at the turn after the second step: no third one ran.
    expect(turns).toHaveLength(2);
    expect(jobRows(file, 'big')).toBe(2498);
    const reopened = await openEngine(`sqlite:${file}`);
    try {
      expect(await (await reopened.queue('big')).stats(6)).toMatchObject({
        ready: 2481,
        active: 10,
        delayed: 5,
        dead: 2,
      });
    } finally {
      await reopened.close();
    }
  });
});
