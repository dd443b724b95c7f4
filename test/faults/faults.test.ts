import { afterAll, describe, expect, it } from 'vitest';
import { violationsOf } from '../history/checkers.js';
import { runScenario } from './scenario-runner.js';
import { QUICK_SCENARIOS, SCENARIOS } from './scenarios.js';
import { killRunningServers } from './server-process.js';

/**
 * A short run of a few fault scenarios over real `leaseq serve` processes (the whole set is
 * `npm run faults`). Each must leave every checker without a violation and every expectation
 * of the fault itself met.
 */
const LOAD_MS = Number(process.env.LEASEQ_FAULTS_LOAD_MS ?? 2500);

afterAll(killRunningServers);

describe('faults over real server processes (short)', () => {
  for (const scenario of SCENARIOS.filter((each) => QUICK_SCENARIOS.includes(each.name))) {
    it(scenario.name, { timeout: 60_000 }, async () => {
      const seed = Math.floor(Math.random() * 2 ** 31);
      const result = await runScenario(scenario, { loadMs: LOAD_MS, seed, drainMs: 20_000 });
      const problems = [...violationsOf(result.checks), ...result.problems];
      expect(problems, `seed ${seed}; ${result.notes.join('; ')}`).toEqual([]);
      // The run did something worth checking.
      expect(result.counts.publish?.ok ?? 0).toBeGreaterThan(0);
      expect(result.counts.ack?.ok ?? 0).toBeGreaterThan(0);
    });
  }
});
