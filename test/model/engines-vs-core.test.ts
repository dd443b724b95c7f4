import fc from 'fast-check';
import { it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';
import { useConformanceEngines } from '../conformance/engines.js';
import { describeEngines } from '../conformance/suite.js';
import { Lockstep } from './lockstep.js';
import { describeStep, queueOptionsArbitrary, type Step, stepArbitrary } from './operations.js';

const engines = await useConformanceEngines({ client: false });

/**
 * Budgets: memory is cheap; durable engines commit every step, so they get fewer runs and a
 * time limit (a failure is still reported with its seed, shrunk as far as the limit allows).
 * LEASEQ_MODEL_RUNS, LEASEQ_MODEL_SEED, LEASEQ_MODEL_PATH and LEASEQ_MODEL_REPLAY_PATH replay
 * or widen a run.
 */
const MAX_COMMANDS = 40;
const RUNS = { memory: 100, durable: 25 };
const DURABLE_TIME_LIMIT_MS = 40_000;

const env = process.env;
const seed = env.LEASEQ_MODEL_SEED === undefined ? undefined : Number(env.LEASEQ_MODEL_SEED);

describeEngines(engines, (h) => {
  const durable = h.capabilities?.durable !== false;
  const numRuns = Number(env.LEASEQ_MODEL_RUNS ?? (durable ? RUNS.durable : RUNS.memory));
  const budget = `${numRuns} runs × ≤ ${MAX_COMMANDS} steps`;
  const title = `random histories give the core's results and states at every step (${budget})`;

  it(title, { timeout: 120_000 }, async ({ onTestFailed }) => {
    const runSeed = seed ?? Math.floor(Math.random() * 0x7fffffff);
    onTestFailed(() => {
      console.error(`model run of ${h.name} failed; replay with LEASEQ_MODEL_SEED=${runSeed}`);
    });
    const commands = fc.commands([stepArbitrary().map((step) => new StepCommand(step))], {
      maxCommands: MAX_COMMANDS,
      size: 'max',
      ...(env.LEASEQ_MODEL_REPLAY_PATH === undefined
        ? {}
        : { replayPath: env.LEASEQ_MODEL_REPLAY_PATH }),
    });
    const property = fc.asyncProperty(queueOptionsArbitrary, commands, async (options, steps) => {
      const name = h.queueName('model');
      const world = new Lockstep(new LeaseQueue(options), await h.engine().queue(name, options));
      try {
        await fc.asyncModelRun(() => ({ model: {}, real: world }), steps);
        await world.finish();
      } finally {
        await h.engine().deleteQueue(name);
      }
    });
    await fc.assert(property, {
      numRuns,
      seed: runSeed,
      ...(env.LEASEQ_MODEL_PATH === undefined ? {} : { path: env.LEASEQ_MODEL_PATH }),
      ...(durable ? { plugins: [fc.interruptAfterTimeLimit(DURABLE_TIME_LIMIT_MS)] } : {}),
    });
  });
});

/** A generated step as a fast-check command: applied to the core and the engine alike. */
class StepCommand implements fc.AsyncCommand<object, Lockstep> {
  constructor(readonly step: Step) {}

  check(): boolean {
    return true;
  }

  run(_model: object, world: Lockstep): Promise<void> {
    return world.apply(this.step);
  }

  toString(): string {
    return describeStep(this.step);
  }
}
