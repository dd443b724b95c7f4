import type { PublishResult } from '../../src/core/index.js';
import { MemoryEngine, type QueueHandle } from '../../src/engine/index.js';
import { prng } from '../crash/protocol.js';
import { type CheckResult, checkHistory } from '../history/checkers.js';
import {
  type FinalState,
  HistoryRecorder,
  type Outcome,
  type PublishOp,
  payloadHash,
  type RedriveOp,
} from '../history/history.js';
import { Coverage } from './coverage.js';
import { EventQueue } from './event-queue.js';
import { SimWorker } from './sim-worker.js';
import { classifySimError, SimWorld } from './sim-world.js';
import { type Swarm, swarmOf } from './swarm.js';

export interface SimResult {
  seed: number;
  swarm: Swarm;
  /** Events run in the safety phase plus the drain. */
  steps: number;
  /** Simulated time at the end, ms. */
  endedAt: number;
  checks: CheckResult[];
  /** The simulation's own oracles (exact-tick acks, counters against rows). */
  oracle: string[];
  coverage: Coverage;
  counts: Record<string, Record<Outcome, number>>;
}

export interface SimOptions {
  /** Puts something between the workers and the queue: a deliberately broken queue, to show the checkers catch it. */
  wrap?: (handle: QueueHandle) => QueueHandle;
}

/**
 * Most events the drain may take before the run counts as stuck, per event of the safety phase
 * (whose backlog the drain works off), and at least.
 */
const DRAIN_STEPS_PER_STEP = 70;
const DRAIN_STEP_LIMIT = 200_000;

/**
 * One seed of the whole-system simulation: the memory engine (the pure core inside) under
 * simulated time, with producers, workers and an operator, and faults from the seed's swarm.
 * `steps` events with faults on (the safety phase), then faults off until every job is acked
 * or dead (the liveness phase), then the history checkers.
 */
export async function simulate(
  seed: number,
  steps: number,
  options: SimOptions = {},
): Promise<SimResult> {
  const swarm = swarmOf(seed);
  const random = prng(seed);
  const events = new EventQueue();
  const engine = new MemoryEngine();
  const wrap = options.wrap ?? ((handle: QueueHandle) => handle);
  const handle = wrap(
    await engine.queue('sim', {
      visibility: swarm.visibilityMs,
      maxDeliveries: swarm.maxDeliveries,
      // Publish retries after a lost answer must not bring an acked job back (R4).
      dedupWindow: 1e12,
    }),
  );
  const coverage = new Coverage();
  let world: SimWorld | undefined;
  const recorder = new HistoryRecorder(() => world?.now ?? 0, classifySimError);
  world = new SimWorld(random, swarm, handle, recorder, coverage, events);
  const sim = world;

  const retries = { pending: 0 };
  for (let p = 0; p < swarm.producers; p++) startProducer(sim, `producer-${p}`, retries);
  const workers = Array.from(
    { length: swarm.workers },
    (_, w) => new SimWorker(sim, `worker-${w}`, w < Math.round(swarm.workers * swarm.sessionShare)),
  );
  for (const worker of workers) worker.start();
  if (swarm.redriveEveryMs > 0) startOperator(sim);

  let step = 0;
  const runOne = async () => {
    const event = events.take();
    if (event === undefined) throw new Error('the simulation ran out of events');
    sim.now = event.at;
    await event.run();
    step += 1;
  };
  while (step < steps) await runOne();

  sim.faultsOn = false;
  const drainStart = step;
  for (;;) {
    await runOne();
    if (step % 100 === 0 && retries.pending === 0 && (await drained(sim))) break;
    if (step - drainStart > Math.max(DRAIN_STEP_LIMIT, steps * DRAIN_STEPS_PER_STEP)) break;
  }
  for (const worker of workers) await worker.settleSession();

  const view = await handle.inspect();
  const final: FinalState = {
    dead: view.dead.map(({ id, reason }) => ({ id, reason })),
    left: [...view.ready, ...view.delayed.map((each) => each.id), ...view.active.map((e) => e.id)],
  };
  const stats = await handle.stats(sim.now);
  if ((stats.deadLetters['max-deliveries'] ?? 0) > 0) coverage.hit('dead-by-max-deliveries');
  // I14: the counters agree with the rows.
  const rows = { ready: view.ready.length, active: view.active.length, dead: view.dead.length };
  const gauges = { ready: stats.ready, active: stats.active, dead: stats.dead };
  if (JSON.stringify(rows) !== JSON.stringify(gauges)) {
    sim.violate(`stats ${JSON.stringify(gauges)} but rows ${JSON.stringify(rows)}`);
  }
  await engine.close();
  return {
    seed,
    swarm,
    steps: step,
    endedAt: sim.now,
    checks: checkHistory(recorder.ops, final),
    oracle: sim.violations,
    coverage,
    counts: recorder.counts(),
  };
}

async function drained(world: SimWorld): Promise<boolean> {
  const view = await world.handle.inspect();
  return view.ready.length + view.delayed.length + view.active.length === 0;
}

/** Publishes singles and batches; sends again (same ids) when an answer is lost. */
function startProducer(world: SimWorld, name: string, retries: { pending: number }): void {
  let next = 0;
  const publish = async (ids: string[], delay: number, attempt: number): Promise<void> => {
    const entries = ids.map((id) => ({ id, payload: { id, size: id.length }, delay }));
    const answer = await world.send<PublishOp, PublishResult[]>(
      name,
      { f: 'publish', ids, payloadHashes: entries.map((entry) => payloadHash(entry.payload)) },
      (now) => world.handle.publishBatch(now, entries),
      () => ({}),
    );
    if (attempt > 0) retries.pending -= 1;
    if (answer.kind === 'ok') {
      const duplicates = answer.value.filter((result) => result.duplicate).length;
      if (duplicates > 0 && attempt === 0) world.violate(`fresh ids ${ids} answered duplicate`);
      if (duplicates > 0) world.coverage.hit('publish-retry-duplicate');
    } else if (answer.kind === 'no-answer') {
      retries.pending += 1;
      world.after(world.between(1, 10), () => publish(ids, delay, attempt + 1));
    } else {
      world.violate(`publish refused: ${answer.error.message}`);
    }
  };
  const produce = async (): Promise<void> => {
    if (!world.faultsOn) return;
    const size = world.chance(0.5) ? 1 : world.between(2, 5);
    // Ids ending in p are poison: every worker nacks them until they die (R13).
    const ids = Array.from({ length: size }, () => {
      const poison = world.chance(world.swarm.poisonRate);
      return `${name}-${next++}${poison ? 'p' : ''}`;
    });
    const delay = world.chance(0.1) ? world.between(1, 2 * world.swarm.visibilityMs) : 0;
    await publish(ids, delay, 0);
    world.after(world.between(1, 15), produce);
  };
  world.after(0, produce);
}

/** Now and then redrives a few dead jobs (R14). */
function startOperator(world: SimWorld): void {
  const redrive = async (): Promise<void> => {
    if (!world.faultsOn) return;
    const dead = await world.handle.deadLetters();
    const ids = dead.slice(0, world.between(1, 3)).map((letter) => letter.id);
    if (ids.length > 0) {
      const answer = await world.send<RedriveOp, number>(
        'operator',
        { f: 'redrive', ids },
        (now) => world.handle.redrive(now, ids),
        () => ({}),
      );
      if (answer.kind === 'ok') for (const id of ids) world.redriven.add(id);
    }
    world.after(world.swarm.redriveEveryMs, redrive);
  };
  world.after(world.swarm.redriveEveryMs, redrive);
}
