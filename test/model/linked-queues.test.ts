import fc from 'fast-check';
import { it } from 'vitest';
import { openEngine } from '../../src/engine/index.js';
import { queueName, useConformanceEngines } from '../conformance/engines.js';
import { describeEngines } from '../conformance/suite.js';
import { LinkedWorld, linkedCommands, linkedConfigArbitrary } from './linked.js';
import { assertParameters, modelRuns, modelSeed } from './runner.js';

/**
 * R26 (with R4, R13, R22–R24, R28, R30, R31): queues linked by `deadLetterQueue`, on SQLite and
 * PostgreSQL, each held to the memory engine step by step (see linked.ts). The memory engine is
 * the reference: its queues are the core's `LeaseQueue`s, linked in one process.
 *
 * LEASEQ_MODEL_RUNS, LEASEQ_MODEL_SEED, LEASEQ_MODEL_PATH and LEASEQ_MODEL_REPLAY_PATH replay
 * or widen a run (see runner.ts).
 */
const engines = await useConformanceEngines({ client: false });

/** LEASEQ_MODEL_STEPS: longer histories than the default (the runs are set by LEASEQ_MODEL_RUNS). */
const MAX_COMMANDS = Number(process.env.LEASEQ_MODEL_STEPS ?? 30);
const RUNS = 30;

describeEngines(
  engines.filter((underTest) => underTest.name !== 'memory'),
  (h) => {
    const numRuns = modelRuns(RUNS);
    const budget = `${numRuns} runs × ≤ ${MAX_COMMANDS} steps`;
    const title = `R26 linked queues give the memory engine's results and states at every step (${budget})`;

    it(title, { timeout: Math.max(120_000, numRuns * 2_000) }, async ({ onTestFailed }) => {
      const runSeed = modelSeed();
      onTestFailed(() => {
        console.error(
          `linked-queues model run of ${h.name} failed; replay with LEASEQ_MODEL_SEED=${runSeed}`,
        );
      });
      const reference = await openEngine('memory:');
      try {
        const property = fc.asyncProperty(
          linkedConfigArbitrary,
          linkedCommands(MAX_COMMANDS),
          async (config, steps) => {
            const names = config.queues.map((_queue, index) => queueName(`linked${index}`));
            const missing = queueName('linked-missing');
            try {
              const world = await LinkedWorld.open(config, names, missing, {
                reference,
                engine: h.engine(),
                engineName: h.name,
              });
              await fc.asyncModelRun(() => ({ model: {}, real: world }), steps);
              await world.finish();
            } finally {
              await Promise.all(names.map((name) => h.engine().deleteQueue(name)));
              for (const name of names) await reference.deleteQueue(name);
            }
          },
        );
        await fc.assert(property, assertParameters(numRuns, runSeed));
      } finally {
        await reference.close();
      }
    });
  },
);
