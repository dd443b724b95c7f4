import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import { BULK_STEP, MOVE_CHUNK } from '../../src/engine/sql/bulk-steps.js';
import { POSTGRES_URL, postgresSkipReason } from './postgres.js';

/**
 * R14, R21, R26: a redrive or moveJobs of all takes steps on the SQL engines, each a transaction
 * of its own. A process killed (SIGKILL) between or within them leaves what the steps that
 * committed did, all of each, and the rest as it was: no job lost, none in two places, the
 * queues' counts those of their jobs. Running the command again completes it.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHILD = fileURLToPath(new URL('./bulk-steps-child.ts', import.meta.url));
const N = 12 * BULK_STEP;
const NOW = 10;

const children = new Set<ChildProcess>();
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const ids = Array.from({ length: N }, (_, n) => `j${n}`);

async function publishAll(queue: QueueHandle): Promise<void> {
  for (let start = 0; start < N; start += 1000) {
    await queue.publishBatch(
      0,
      ids.slice(start, start + 1000).map((id) => ({ id, payload: { n: id } })),
    );
  }
}

/** Every job of `queue` dead, in publish order. */
async function killAll(queue: QueueHandle): Promise<void> {
  const session = await queue.openSession(0);
  let last = 0;
  for (;;) {
    const batch = await queue.reserve(0, { max: 1000, session });
    if (batch.length === 0) break;
    last = (batch.at(-1) as { token: number }).token;
  }
  await queue.nackUpTo(0, session, last, { requeue: false });
  await queue.closeSession(0, session);
}

/**
 * Starts the child on `args` and kills it once `progress` (polled through this process's own
 * handle on the same storage) is past 0 and short of N. Answers whether it was killed midway
 * (false: it finished first).
 */
async function killMidway(args: string[], progress: () => Promise<number>): Promise<boolean> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    // On SQLite a step takes a few ms: the child holds each turn of its loop so that the polls
    // here see it between steps (a PostgreSQL step's round trips take long enough).
    env: { ...process.env, LEASEQ_TEST_TURN_MS: args[0]?.startsWith('sqlite:') ? '20' : '0' },
  });
  children.add(child);
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  let output = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    output += chunk;
  });
  while (!output.includes('running') && child.exitCode === null) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  let midway = false;
  for (;;) {
    const done = await progress();
    if (done > 0 && done < N) {
      child.kill('SIGKILL');
      midway = true;
      break;
    }
    if (done >= N || output.includes('done')) break;
  }
  await exited;
  children.delete(child);
  return midway;
}

interface Target {
  name: 'sqlite' | 'postgres';
  url: () => string;
  skip: () => Promise<string | undefined>;
}

const targets: Target[] = [
  {
    name: 'sqlite',
    url: () => {
      const dir = mkdtempSync(join(tmpdir(), 'leaseq-bulk-crash-'));
      dirs.push(dir);
      return `sqlite:${join(dir, 'bulk.db')}`;
    },
    skip: async () => undefined,
  },
  { name: 'postgres', url: () => POSTGRES_URL, skip: postgresSkipReason },
];

for (const target of targets) {
  describe(`${target.name}: SIGKILL during a bulk command in steps`, () => {
    let skip: string | undefined;
    beforeAll(async () => {
      skip = await target.skip();
    });
    const engines: Engine[] = [];
    afterAll(async () => {
      await Promise.all(engines.splice(0).map((engine) => engine.close()));
    });
    const unique = (label: string) => `bulk-crash-${label}-${process.pid}-${Date.now()}`;

    it('R14 R21 a redrive of all killed midway leaves a front of the dead set redriven, whole steps of it, and the rest dead', {
      timeout: 120_000,
    }, async (context) => {
      if (skip !== undefined) return context.skip(skip);
      const url = target.url();
      const name = unique('dl');
      let engine = await openEngine(url);
      engines.push(engine);
      const queue = await engine.queue(name, { maxDeliveries: 1 });
      await publishAll(queue);
      await killAll(queue);
      expect(await queue.stats(0)).toMatchObject({ dead: N });
      const midway = await killMidway([url, 'redrive', name, String(NOW)], async () => {
        return (await queue.stats(NOW)).redriven;
      });
      expect(midway).toBe(true);
      await engine.close();
      engine = await openEngine(url);
      engines.push(engine);
      const after = engine.handle(name);
      const view = await after.inspect();
      const back = view.ready.length;
      // Each step committed whole or not at all: a front of the dead set, in its order.
      expect(back % BULK_STEP).toBe(0);
      expect(back).toBeGreaterThan(0);
      expect(back).toBeLessThan(N);
      expect(view.ready).toEqual(ids.slice(0, back));
      expect(view.dead.map((job) => job.id)).toEqual(ids.slice(back));
      expect(await after.stats(NOW)).toMatchObject({
        ready: back,
        dead: N - back,
        active: 0,
        redriven: back,
      });
      expect(await after.redrive(NOW)).toBe(N - back);
      expect((await after.inspect()).ready).toEqual(ids);
      expect(await after.stats(NOW)).toMatchObject({ ready: N, dead: 0, redriven: N });
      await engine.deleteQueue(name);
    });

    it('R26 R21 a moveJobs of all killed midway leaves a front of the jobs moved, whole steps of it, and the rest where they were', {
      timeout: 120_000,
    }, async (context) => {
      if (skip !== undefined) return context.skip(skip);
      const url = target.url();
      const from = unique('from');
      const to = unique('to');
      let engine = await openEngine(url);
      engines.push(engine);
      const source = await engine.queue(from);
      await engine.queue(to);
      await publishAll(source);
      const midway = await killMidway([url, 'move', from, String(NOW), to], async () => {
        return N - (await source.stats(NOW)).ready;
      });
      expect(midway).toBe(true);
      await engine.close();
      engine = await openEngine(url);
      engines.push(engine);
      const left = engine.handle(from);
      const arrived = engine.handle(to);
      const moved = (await arrived.inspect()).ready;
      expect(moved.length % MOVE_CHUNK).toBe(0);
      expect(moved.length).toBeGreaterThan(0);
      expect(moved).toEqual(ids.slice(0, moved.length));
      expect((await left.inspect()).ready).toEqual(ids.slice(moved.length));
      expect(await left.stats(NOW)).toMatchObject({ ready: N - moved.length, active: 0 });
      expect(await arrived.stats(NOW)).toMatchObject({ ready: moved.length });
      // The source's ready band is whole: it hands its jobs out from the front, in order.
      const taken = await left.reserve(NOW, { max: 10 });
      expect(taken.map((delivery) => delivery.id)).toEqual(
        ids.slice(moved.length, moved.length + 10),
      );
      expect(
        await left.ackMany(
          NOW,
          taken.map((delivery) => delivery.token),
        ),
      ).toEqual(taken.map(() => true));
      expect(await left.moveJobs(NOW, { to })).toBe(N - moved.length - 10);
      expect(await left.stats(NOW)).toMatchObject({ ready: 0 });
      expect(await arrived.stats(NOW)).toMatchObject({ ready: N - 10 });
      await engine.deleteQueue(from);
      await engine.deleteQueue(to);
    });
  });
}
