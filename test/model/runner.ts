import fc from 'fast-check';
import type { Lockstep } from './lockstep.js';
import { describeStep, type Step, stepArbitrary } from './operations.js';

/**
 * The one runner of the model tests: generated steps (operations.ts) applied by a Lockstep,
 * which checks the core under the shadow's invariants and, given an engine queue, compares the
 * engine with the core at every step.
 *
 * LEASEQ_MODEL_RUNS, LEASEQ_MODEL_SEED, LEASEQ_MODEL_PATH and LEASEQ_MODEL_REPLAY_PATH replay
 * or widen a run.
 */
const env = process.env;

/** The seed of this run: LEASEQ_MODEL_SEED, or a fresh one to report on failure. */
export function modelSeed(): number {
  const seed = env.LEASEQ_MODEL_SEED;
  return seed === undefined ? Math.floor(Math.random() * 0x7fffffff) : Number(seed);
}

/** LEASEQ_MODEL_RUNS, or the given default. */
export function modelRuns(fallback: number): number {
  return Number(env.LEASEQ_MODEL_RUNS ?? fallback);
}

/** Sequences of up to `maxCommands` generated steps, as fast-check commands. */
export function stepCommands(
  maxCommands: number,
  options: { queueFeatures?: boolean } = {},
): fc.Arbitrary<Iterable<fc.AsyncCommand<object, Lockstep>>> {
  return fc.commands([stepArbitrary(options).map((step) => new StepCommand(step))], {
    maxCommands,
    size: 'max',
    ...(env.LEASEQ_MODEL_REPLAY_PATH === undefined
      ? {}
      : { replayPath: env.LEASEQ_MODEL_REPLAY_PATH }),
  });
}

/** Runs the steps on `world`, then its end checks (comparison, and the drain of I8). */
export async function runSteps(
  world: Lockstep,
  steps: Iterable<fc.AsyncCommand<object, Lockstep>>,
): Promise<void> {
  await fc.asyncModelRun(() => ({ model: {}, real: world }), steps);
  await world.finish();
}

/** The parameters of fc.assert for a model property: seed, runs, and a replay path if given. */
export function assertParameters(numRuns: number, seed: number): fc.Parameters<unknown> {
  return {
    numRuns,
    seed,
    ...(env.LEASEQ_MODEL_PATH === undefined ? {} : { path: env.LEASEQ_MODEL_PATH }),
  };
}

/** A generated step as a fast-check command: applied by the Lockstep to the core (and engine). */
export class StepCommand implements fc.AsyncCommand<object, Lockstep> {
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
