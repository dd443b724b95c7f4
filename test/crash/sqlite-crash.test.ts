import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { runCrashRounds } from './crash-rounds.js';
import { killStartedChildren, runSeed } from './processes.js';

/**
 * R5, R6, R8, R12, R21 and I1, I2, I5, I7, I12 across real crashes: a child process publishes and
 * consumes on a SQLite file and is killed with SIGKILL at a random moment, five rounds in a row
 * on the same file. See crash-history.ts for what is checked after each restart.
 */
const ROUNDS = Number(process.env.LEASEQ_CRASH_ROUNDS ?? 5);

const dirs: string[] = [];

afterEach(async () => {
  await killStartedChildren();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('SQLite: SIGKILL while publishing and consuming', () => {
  for (const durability of ['fsync', 'os'] as const) {
    it(`loses nothing and resurrects nothing (durability ${durability})`, {
      timeout: 20_000,
    }, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'leaseq-crash-'));
      dirs.push(dir);
      const url = `sqlite:${join(dir, 'crash.db')}`;
      const seed = runSeed();
      const started = Date.now();
      const result = await runCrashRounds({
        label: `sqlite ${durability}`,
        url,
        durability,
        queue: 'crash',
        rounds: ROUNDS,
        seed,
        visibility: 250,
        openEngine: () => openEngine(url, { durability }),
      });
      console.info(
        `sqlite ${durability}: seed ${seed}, ${ROUNDS} kills after ${result.killDelays.join('/')} ms, ` +
          `${result.committedJobs} jobs, ${JSON.stringify(result.counts)}, ${Date.now() - started} ms`,
      );
      expect(result.counts.rounds).toBe(ROUNDS + 1);
      // The run did something worth checking: jobs were published, delivered and acked.
      expect(result.counts.publishedReturned).toBeGreaterThan(0);
      expect(result.counts.acksTrue).toBeGreaterThan(0);
    });
  }
});
