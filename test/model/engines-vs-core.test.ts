import fc from 'fast-check';
import { it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';
import { useConformanceEngines } from '../conformance/engines.js';
import { describeEngines } from '../conformance/suite.js';
import { Lockstep } from './lockstep.js';
import { boundedQueueOptionsArbitrary } from './operations.js';
import { assertParameters, modelRuns, modelSeed, runSteps, stepCommands } from './runner.js';

const engines = await useConformanceEngines({ client: false });

/**
 * Budgets: memory is cheap; durable engines commit every step, so they get fewer runs and a
 * time limit (a failure is still reported with its seed, shrunk as far as the limit allows).
 * See runner.ts for the variables that replay or widen a run.
 */
const MAX_COMMANDS = 40;
const RUNS = { memory: 100, durable: 25 };
const DURABLE_TIME_LIMIT_MS = 40_000;

describeEngines(engines, (h) => {
  const durable = h.capabilities?.durable !== false;
  const numRuns = modelRuns(durable ? RUNS.durable : RUNS.memory);
  const budget = `${numRuns} runs × ≤ ${MAX_COMMANDS} steps`;
  const title = `random histories give the core's results and states at every step (${budget})`;

  it(title, { timeout: 120_000 }, async ({ onTestFailed }) => {
    const runSeed = modelSeed();
    onTestFailed(() => {
      console.error(`model run of ${h.name} failed; replay with LEASEQ_MODEL_SEED=${runSeed}`);
    });
    const commands = stepCommands(MAX_COMMANDS);
    const property = fc.asyncProperty(
      boundedQueueOptionsArbitrary,
      commands,
      async (options, steps) => {
        const name = h.queueName('model');
        const world = new Lockstep(new LeaseQueue(options), await h.engine().queue(name, options));
        try {
          await runSteps(world, steps);
        } finally {
          await h.engine().deleteQueue(name);
        }
      },
    );
    await fc.assert(property, {
      ...assertParameters(numRuns, runSeed),
      ...(durable ? { plugins: [fc.interruptAfterTimeLimit(DURABLE_TIME_LIMIT_MS)] } : {}),
    });
  });
});
