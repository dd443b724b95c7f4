/**
 * Micro-benchmark of the pure core (LeaseQueue) against its floor (bench/floor.ts).
 *
 *   npm run bench:core        (node --expose-gc --import tsx bench/core.ts)
 *
 * For each N: publish N jobs (ids `j${i}`, payload { n: i }), then reserve+ack them one at a
 * time; `now` is a counter advanced by one per operation. Heap per job is the retained heap with
 * the N jobs queued: gc, baseline, publish, gc, heapUsed - baseline, divided by N, in a run of
 * its own after the timed ones (a forced gc resets V8's inline caches). Each figure is
 * the median of 5 runs, after ten warm-up runs at N = 10^4 each (V8 needs several short runs
 * before its optimised code settles; fewer make the 10^4 row measure the JIT, not the queue). The core's loops give up once the run
 * passes BUDGET_MS, so a slow core cannot hold the bench past ~2 minutes. It is a report: the
 * exit code is 0 whether the targets pass or fail.
 */
import { availableParallelism, loadavg } from 'node:os';
import { LeaseQueue } from '../src/core/index.js';
import { floorWorkload } from './floor.js';
import { formatInteger, markdownTable } from './table.js';

const JOB_COUNTS = [10_000, 100_000, 1_000_000];
const WARM_UP_JOB_COUNT = 10_000;
const WARM_UP_RUNS = 10;
const REPETITIONS = 5;
const BUDGET_MS = 75_000;

interface Workload {
  publishAll(jobCount: number, deadlineMs: number): void;
  reserveAckAll(jobCount: number, deadlineMs: number): void;
  verify(jobCount: number): void;
}

interface Sample {
  publishMs: number;
  reserveAckMs: number;
}

class OverBudgetError extends Error {}

function checkBudget(i: number, deadlineMs: number): void {
  if ((i & 0x3fff) === 0 && performance.now() > deadlineMs) throw new OverBudgetError();
}

function coreWorkload(): Workload {
  const queue = new LeaseQueue({ visibility: 30_000 });
  const reserveOne = { max: 1 };
  let now = 0;
  return {
    publishAll(jobCount, deadlineMs) {
      for (let i = 0; i < jobCount; i++) {
        checkBudget(i, deadlineMs);
        queue.publish(now++, { id: `j${i}`, payload: { n: i } });
      }
    },
    reserveAckAll(jobCount, deadlineMs) {
      for (let i = 0; i < jobCount; i++) {
        checkBudget(i, deadlineMs);
        const delivery = queue.reserve(now++, reserveOne)[0];
        if (delivery === undefined || !queue.ack(now++, delivery.token)) {
          throw new Error(`core: job ${i} was not delivered and acked`);
        }
      }
    },
    verify(jobCount) {
      const stats = queue.stats(now);
      if (
        stats.published !== jobCount ||
        stats.acks !== jobCount ||
        stats.ready + stats.active !== 0
      ) {
        throw new Error(`core: published ${stats.published}, acked ${stats.acks} of ${jobCount}`);
      }
    },
  };
}

function requireGc(): () => void {
  if (globalThis.gc === undefined) throw new Error('run with node --expose-gc');
  return globalThis.gc;
}
const gc = requireGc();

/**
 * Times one run. No forced gc() here: a forced full collection throws away V8's inline caches,
 * which makes the next short run measure re-warming, not the queue (a 10^4 run of the core went
 * from ~4 ms to ~30 ms). Heap is measured in its own run (measureHeap).
 */
function measure(createWorkload: () => Workload, jobCount: number, deadlineMs: number): Sample {
  const workload = createWorkload();
  const publishStartMs = performance.now();
  workload.publishAll(jobCount, deadlineMs);
  const publishMs = performance.now() - publishStartMs;
  const reserveStartMs = performance.now();
  workload.reserveAckAll(jobCount, deadlineMs);
  const reserveAckMs = performance.now() - reserveStartMs;
  workload.verify(jobCount);
  return { publishMs, reserveAckMs };
}

/** Heap retained per queued job: gc, baseline, publish, gc, difference over N. Not timed. */
function measureHeap(createWorkload: () => Workload, jobCount: number): number {
  gc();
  const baselineBytes = process.memoryUsage().heapUsed;
  const workload = createWorkload();
  workload.publishAll(jobCount, Number.POSITIVE_INFINITY);
  gc();
  const bytesPerJob = (process.memoryUsage().heapUsed - baselineBytes) / jobCount;
  workload.reserveAckAll(jobCount, Number.POSITIVE_INFINITY);
  return bytesPerJob;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  const upper = sorted[Math.floor(middle)] ?? Number.NaN;
  return Number.isInteger(middle) ? ((sorted[middle - 1] ?? Number.NaN) + upper) / 2 : upper;
}

/** Medians of the runs that finished, as rates; NaN everywhere when none did. */
function summarize(jobCount: number, samples: Sample[]) {
  const perSecond = (durationMs: number) => (jobCount / durationMs) * 1000;
  return {
    runs: samples.length,
    publishPerSec: perSecond(median(samples.map((s) => s.publishMs))),
    reserveAckPerSec: perSecond(median(samples.map((s) => s.reserveAckMs))),
    jobsPerSec: perSecond(median(samples.map((s) => s.publishMs + s.reserveAckMs))),
    /** Filled by measureHeap, in a run of its own. */
    bytesPerJob: Number.NaN,
  };
}

const startMs = performance.now();
const deadlineMs = startMs + BUDGET_MS;
let overBudget = false;

function measureCore(jobCount: number): Sample[] {
  if (overBudget) return [];
  try {
    return [measure(coreWorkload, jobCount, deadlineMs)];
  } catch (error) {
    if (!(error instanceof OverBudgetError)) throw error;
    overBudget = true;
    return [];
  }
}

for (let run = 0; run < WARM_UP_RUNS; run++) {
  measureCore(WARM_UP_JOB_COUNT);
  measure(floorWorkload, WARM_UP_JOB_COUNT, Number.POSITIVE_INFINITY);
}

const results = JOB_COUNTS.map((jobCount) => {
  const core: Sample[] = [];
  const floor: Sample[] = [];
  for (let run = 0; run < REPETITIONS; run++) {
    core.push(...measureCore(jobCount));
    floor.push(measure(floorWorkload, jobCount, Number.POSITIVE_INFINITY));
  }
  // After the timed runs: a forced gc() must not come before them (see measure).
  const coreSummary = summarize(jobCount, core);
  const floorSummary = summarize(jobCount, floor);
  if (core.length > 0) coreSummary.bytesPerJob = measureHeap(coreWorkload, jobCount);
  floorSummary.bytesPerJob = measureHeap(floorWorkload, jobCount);
  return { jobCount, core: coreSummary, floor: floorSummary };
});

const label = (jobCount: number) => `10^${Math.round(Math.log10(jobCount))}`;
const show = (value: number) => (Number.isFinite(value) ? formatInteger(value) : '-');
const ratio = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : '-');

const [loadAverage = 0] = loadavg();
console.log(
  `leaseq core vs floor, node ${process.version}, median of ${REPETITIONS} runs, ` +
    `load average ${loadAverage.toFixed(1)} on ${availableParallelism()} CPUs\n`,
);
console.log(
  markdownTable(
    [
      'N',
      'core publish/s',
      'core reserve+ack/s',
      'core jobs/s',
      'floor jobs/s',
      'core/floor',
      'heap B/job core',
      'heap B/job floor',
    ],
    results.map(({ jobCount, core, floor }) => [
      label(jobCount),
      show(core.publishPerSec),
      show(core.reserveAckPerSec),
      show(core.jobsPerSec),
      show(floor.jobsPerSec),
      ratio(core.jobsPerSec / floor.jobsPerSec),
      show(core.bytesPerJob),
      show(floor.bytesPerJob),
    ]),
  ),
);
console.log();

for (const { jobCount, core } of results) {
  if (core.runs < REPETITIONS) {
    console.log(
      `note: core at ${label(jobCount)} finished ${core.runs} of ${REPETITIONS} runs ` +
        `(the rest passed the ${BUDGET_MS / 1000} s budget)`,
    );
  }
}

const passFail = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
const floorRatios = results.map((r) => r.core.jobsPerSec / r.floor.jobsPerSec);
const floorRatioList = results.map((r, i) => `${label(r.jobCount)} ${ratio(floorRatios[i] ?? 0)}`);
console.log(
  `${passFail(floorRatios.every((value) => value >= 1 / 3))} core jobs/s >= 1/3 of floor ` +
    `jobs/s at every N: core/floor ${floorRatioList.join(', ')} (need >= 0.33)`,
);
const first = results[0];
const last = results.at(-1);
if (first && last) {
  const scaling = last.core.jobsPerSec / first.core.jobsPerSec;
  console.log(
    `${passFail(scaling >= 0.5)} core jobs/s at ${label(last.jobCount)} within 2x of ` +
      `${label(first.jobCount)}: ${show(last.core.jobsPerSec)} vs ${show(first.core.jobsPerSec)} ` +
      `jobs/s (${ratio(scaling)}x, need >= 0.50)`,
  );
  // The floor's own slope: how much of the slowdown is the machine (caches, a larger heap to
  // collect) rather than the core's data structures.
  const floorScaling = last.floor.jobsPerSec / first.floor.jobsPerSec;
  console.log(
    `     for scale: the floor at ${label(last.jobCount)} runs at ${ratio(floorScaling)}x its ` +
      `${label(first.jobCount)} rate (${show(last.floor.jobsPerSec)} vs ${show(first.floor.jobsPerSec)} jobs/s)`,
  );
}
console.log(`\ntotal ${((performance.now() - startMs) / 1000).toFixed(1)} s`);
