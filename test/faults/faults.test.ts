import { afterAll, describe, expect, it } from 'vitest';
import { violationsOf } from '../history/checkers.js';
import { runScenario } from './scenario-runner.js';
import { QUICK_SCENARIOS, SCENARIOS } from './scenarios.js';
import { killRunningServers } from './server-process.js';

/**
 * A short run of a few fault scenarios over real `leaseq serve` processes (the whole set is
 * `npm run faults`, over the stream with `--transport stream`). Each must leave every checker without a violation and every expectation
 * of the fault itself met.
 */
const LOAD_MS = Number(process.env.LEASEQ_FAULTS_LOAD_MS ?? 2500);

afterAll(killRunningServers);

/** The quick scenarios with the clients over plain HTTP, and one of them over the stream. */
const RUNS = [
  ...QUICK_SCENARIOS.map((name) => ({ name, transport: 'http' as const })),
  { name: 'kill-sqlite-fsync', transport: 'stream' as const },
];

describe('faults over real server processes (short)', () => {
  for (const { name, transport } of RUNS) {
    const scenario = SCENARIOS.find((each) => each.name === name);
    if (scenario === undefined) throw new Error(`no scenario ${name}`);
    it(`${name} (clients over ${transport})`, { timeout: 60_000 }, async () => {
      const seed = Math.floor(Math.random() * 2 ** 31);
      const result = await runScenario(scenario, {
        loadMs: LOAD_MS,
        seed,
        drainMs: 20_000,
        transport,
      });
      const problems = [...violationsOf(result.checks), ...result.problems];
      expect(problems, `seed ${seed}; ${result.notes.join('; ')}`).toEqual([]);
      // The run did something worth checking.
      expect(result.counts.publish?.ok ?? 0).toBeGreaterThan(0);
      expect(result.counts.ack?.ok ?? 0).toBeGreaterThan(0);
    });
  }
});
