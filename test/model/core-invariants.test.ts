import fc from 'fast-check';
import { it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';
import { Lockstep } from './lockstep.js';
import { queueOptionsArbitrary } from './operations.js';
import { assertParameters, modelRuns, modelSeed, runSteps, stepCommands } from './runner.js';

/**
 * The core alone is cheap: many runs of longer histories than the engines get. Its steps use
 * none of R22–R24, so that the shadow checks every step (see shadow.ts).
 */
const MAX_COMMANDS = 60;
const RUNS = 200;

const numRuns = modelRuns(RUNS);
const title = `random histories keep the invariants I1–I9 and each call’s rule (R2–R14, R16, R17, R19, R33) at every step of the core (${numRuns} runs × ≤ ${MAX_COMMANDS} steps)`;

it(title, { timeout: 120_000 }, async ({ onTestFailed }) => {
  const runSeed = modelSeed();
  onTestFailed(() => {
    console.error(`model run of the core failed; replay with LEASEQ_MODEL_SEED=${runSeed}`);
  });
  const property = fc.asyncProperty(
    queueOptionsArbitrary,
    stepCommands(MAX_COMMANDS, { queueFeatures: false }),
    async (options, steps) => {
      await runSteps(new Lockstep(new LeaseQueue(options)), steps);
    },
  );
  await fc.assert(property, assertParameters(numRuns, runSeed));
});
