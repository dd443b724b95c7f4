/** Turns the runs into the markdown report, the chart and the targets' verdicts. */
import { basename } from 'node:path';
import type { GrowthResult } from '../growth.js';
import { SUBJECTS, type SubjectName } from '../subjects/index.js';
import { formatInteger, markdownTable } from '../table.js';
import type { WorkloadResult } from '../workload.js';
import { barChart, type Panel } from './chart.js';
import { median, type Summary, summarize } from './stats.js';

export interface Outcome<T> {
  status: 'ok' | 'timeout' | 'failed';
  result?: T;
  ms: number;
  detail?: string;
}

interface Workload {
  key: 'w1' | 'w2c1' | 'w2c32' | 'w3p50' | 'w3p99' | 'w4c1' | 'w4c32';
  title: string;
  unit: string;
  higherIsBetter: boolean;
  value(result: WorkloadResult): number;
  /** The jobs done and asked for, when the phase's budget ended it early. */
  cut(result: WorkloadResult): { done: number; of: number } | undefined;
}

const cutRate = (rate: { jobs: number; of: number }) =>
  rate.jobs < rate.of ? { done: rate.jobs, of: rate.of } : undefined;
/** A W4 figure: NaN for results written before W4 (or a phase left out). */
const libraryRate = (rate: WorkloadResult['w4c1']) => rate?.perSecond ?? Number.NaN;
const cutLibrary = (rate: WorkloadResult['w4c1']) =>
  rate === undefined ? undefined : cutRate(rate);
// Nothing sent: the phase was left out (--phases), not cut.
const cutLatency = (result: WorkloadResult, expected: number) =>
  result.w3.sent > 0 && result.w3.handled < expected
    ? { done: result.w3.handled, of: expected }
    : undefined;

export function workloads(latencyJobs: number): Workload[] {
  return [
    {
      key: 'w1',
      title: 'W1 enqueue',
      unit: 'jobs/s',
      higherIsBetter: true,
      value: (r) => r.w1.perSecond,
      cut: (r) => cutRate(r.w1),
    },
    {
      key: 'w2c1',
      title: 'W2 drain c=1',
      unit: 'jobs/s',
      higherIsBetter: true,
      value: (r) => r.w2c1.perSecond,
      cut: (r) => cutRate(r.w2c1),
    },
    {
      key: 'w2c32',
      title: 'W2 drain c=32',
      unit: 'jobs/s',
      higherIsBetter: true,
      value: (r) => r.w2c32.perSecond,
      cut: (r) => cutRate(r.w2c32),
    },
    {
      key: 'w3p50',
      title: 'W3 latency p50',
      unit: 'ms',
      higherIsBetter: false,
      value: (r) => r.w3.p50,
      cut: (r) => cutLatency(r, latencyJobs),
    },
    {
      key: 'w3p99',
      title: 'W3 latency p99',
      unit: 'ms',
      higherIsBetter: false,
      value: (r) => r.w3.p99,
      cut: (r) => cutLatency(r, latencyJobs),
    },
    {
      key: 'w4c1',
      title: 'W4 library c=1',
      unit: 'jobs/s',
      higherIsBetter: true,
      value: (r) => libraryRate(r.w4c1),
      cut: (r) => cutLibrary(r.w4c1),
    },
    {
      key: 'w4c32',
      title: 'W4 library c=32',
      unit: 'jobs/s',
      higherIsBetter: true,
      value: (r) => libraryRate(r.w4c32),
      cut: (r) => cutLibrary(r.w4c32),
    },
  ];
}

/** The workloads of the main table, and those of the consumer-library table. */
export const MAIN_WORKLOADS: readonly Workload['key'][] = ['w1', 'w2c1', 'w2c32', 'w3p50', 'w3p99'];
/** Every workload phase a run can do (`--phases`), in the order it does them. */
export const ALL_PHASES: readonly string[] = ['w1', 'w2c1', 'w2c32', 'w3', 'w4c1', 'w4c32'];

export const LIBRARY_WORKLOADS: readonly Workload['key'][] = ['w4c1', 'w4c32'];

/** For each W4 column, the W2 drain of the same concurrency: the library over the raw calls. */
const RAW_OF: Partial<Record<Workload['key'], Workload['key']>> = { w4c1: 'w2c1', w4c32: 'w2c32' };

export interface Figure {
  summary: Summary | undefined;
  /** Runs that the phase's budget cut short: jobs done of jobs asked (medians). */
  cut: { runs: number; done: number; of: number } | undefined;
  failedRuns: number;
}

export type Figures = Record<SubjectName, Record<Workload['key'], Figure>>;

export function figures(
  outcomes: ReadonlyMap<SubjectName, readonly Outcome<WorkloadResult>[]>,
  latencyJobs: number,
): Figures {
  const all = {} as Figures;
  for (const [subject, runs] of outcomes) {
    const ok = runs.flatMap((run) => (run.result === undefined ? [] : [run.result]));
    const row = {} as Record<Workload['key'], Figure>;
    for (const workload of workloads(latencyJobs)) {
      const values = ok.map(workload.value).filter(Number.isFinite);
      const cuts = ok.flatMap((r) => {
        const cut = workload.cut(r);
        return cut === undefined ? [] : [cut];
      });
      row[workload.key] = {
        summary: summarize(values),
        cut:
          cuts.length === 0
            ? undefined
            : {
                runs: cuts.length,
                done: median(cuts.map((c) => c.done)),
                of: median(cuts.map((c) => c.of)),
              },
        failedRuns: runs.length - ok.length,
      };
    }
    all[subject] = row;
  }
  return all;
}

const label = (name: SubjectName) => SUBJECTS.find((s) => s.name === name)?.label ?? name;
const isLeaseq = (name: SubjectName) => SUBJECTS.find((s) => s.name === name)?.leaseq === true;

/** The best system that is not leaseq, for one workload. */
export function bestOther(
  all: Figures,
  workload: Workload,
): { subject: SubjectName; median: number } | undefined {
  let best: { subject: SubjectName; median: number } | undefined;
  for (const subject of Object.keys(all) as SubjectName[]) {
    if (isLeaseq(subject)) continue;
    const value = all[subject][workload.key].summary?.median;
    if (value === undefined || !Number.isFinite(value)) continue;
    const better =
      best === undefined || (workload.higherIsBetter ? value > best.median : value < best.median);
    if (better) best = { subject, median: value };
  }
  return best;
}

export function formatMs(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (value < 10) return value.toFixed(2);
  if (value < 100) return value.toFixed(1);
  return formatInteger(value);
}

function formatFigure(figure: Figure, workload: Workload): string {
  const summary = figure.summary;
  if (summary === undefined) return figure.failedRuns > 0 ? 'failed' : '–';
  const value = workload.unit === 'ms' ? formatMs(summary.median) : formatInteger(summary.median);
  const percent = summary.spread * 100;
  const spread = summary.runs < 2 ? '' : percent < 0.5 ? ' ±<1%' : ` ±${Math.round(percent)}%`;
  const marks = `${figure.cut === undefined ? '' : ' †'}${figure.failedRuns > 0 ? ' ‡' : ''}`;
  return `${value}${spread}${marks}`;
}

export function formatRatio(ratio: number): string {
  if (!Number.isFinite(ratio)) return '–';
  return `${ratio >= 10 ? ratio.toFixed(1) : ratio.toFixed(2)}×`;
}

/**
 * A ratio beside the bound it is held to, with as many decimals as it takes not to print the
 * bound itself when it misses or passes by less than the rounding: 1.996 against 2 is "1.996×".
 */
export function formatRatioAgainst(ratio: number, bound: number | undefined): string {
  const text = formatRatio(ratio);
  if (bound === undefined || ratio === bound || text !== formatRatio(bound)) return text;
  for (let digits = 3; digits <= 6; digits++) {
    const finer = ratio.toFixed(digits);
    if (Number(finer) !== bound) return `${finer}×`;
  }
  return `${ratio}×`;
}

/**
 * One row per system: each workload of `keys` with its ratio to the best other system, and for
 * a W4 workload also its ratio to the same system's W2 drain (the library over the raw calls).
 */
export function resultsTable(
  all: Figures,
  latencyJobs: number,
  keys: readonly Workload['key'][] = MAIN_WORKLOADS,
): string {
  const list = workloads(latencyJobs).filter((workload) => keys.includes(workload.key));
  const header = ['system'];
  for (const workload of list) {
    header.push(`${workload.title} (${workload.unit})`, '× best other');
    const raw = RAW_OF[workload.key];
    if (raw !== undefined) header.push(`÷ ${raw.toUpperCase().replace('C', ' c=')}`);
  }
  const rows: string[][] = [];
  for (const subject of Object.keys(all) as SubjectName[]) {
    const row: string[] = [label(subject)];
    for (const workload of list) {
      const figure = all[subject][workload.key];
      const mine = figure.summary?.median;
      row.push(formatFigure(figure, workload));
      const best = bestOther(all, workload);
      if (isLeaseq(subject)) {
        row.push(mine === undefined || best === undefined ? '–' : formatRatio(mine / best.median));
      } else {
        row.push(best?.subject === subject ? 'best' : '');
      }
      const raw = RAW_OF[workload.key];
      if (raw !== undefined) {
        const rawMedian = all[subject][raw].summary?.median;
        row.push(
          mine === undefined || rawMedian === undefined ? '–' : formatRatio(mine / rawMedian),
        );
      }
    }
    rows.push(row);
  }
  return markdownTable(header, rows);
}

export function cutNotes(all: Figures, latencyJobs: number): string[] {
  const cut: string[] = [];
  const failed: string[] = [];
  for (const subject of Object.keys(all) as SubjectName[]) {
    for (const workload of workloads(latencyJobs)) {
      const figure = all[subject][workload.key];
      if (figure.cut !== undefined) {
        const runs = `${figure.cut.runs} run${figure.cut.runs === 1 ? '' : 's'}`;
        cut.push(
          `${label(subject)}, ${workload.title} (${formatInteger(figure.cut.done)} of ${formatInteger(figure.cut.of)} in ${runs})`,
        );
      }
      if (figure.failedRuns > 0) {
        failed.push(`${label(subject)}, ${workload.title} (${figure.failedRuns})`);
      }
    }
  }
  const notes: string[] = [];
  if (cut.length > 0) {
    notes.push(
      `† The phase's time budget ended it before all its jobs were done (median jobs done); the figure is over the jobs done: ${cut.join('; ')}.`,
    );
  }
  if (failed.length > 0) {
    notes.push(
      `‡ Runs that failed or timed out (how many); the figure is over the others: ${failed.join('; ')}.`,
    );
  }
  return notes;
}

export interface Target {
  text: string;
  subject: SubjectName;
  workload: Workload['key'];
  /** Compared with this system, or with the best of the others… */
  against?: SubjectName;
  /** …or with the same system's figure in this other workload. */
  againstWorkload?: Workload['key'];
  /** The ratio (leaseq ÷ the other) must be at least this… */
  atLeast?: number;
  /** …or at most this. */
  atMost?: number;
}

export const TARGETS: Target[] = [
  {
    text: 'W1 enqueue, SQLite fsync ≥ 2× the best other',
    subject: 'leaseq-sqlite-fsync',
    workload: 'w1',
    atLeast: 2,
  },
  {
    text: 'W2 drain c=1, SQLite fsync ≥ 1× the best other',
    subject: 'leaseq-sqlite-fsync',
    workload: 'w2c1',
    atLeast: 1,
  },
  {
    text: 'W2 drain c=32, SQLite fsync ≥ 2× the best other',
    subject: 'leaseq-sqlite-fsync',
    workload: 'w2c32',
    atLeast: 2,
  },
  {
    text: 'W2 drain c=1 over the stream ≥ 1× the best other',
    subject: 'leaseq-stream',
    workload: 'w2c1',
    atLeast: 1,
  },
  {
    text: 'W2 drain c=32 over the stream ≥ 1× the best other',
    subject: 'leaseq-stream',
    workload: 'w2c32',
    atLeast: 1,
  },
  {
    text: 'W3 latency p99 over the stream ≤ 1.5× the best other',
    subject: 'leaseq-stream',
    workload: 'w3p99',
    atMost: 1.5,
  },
  {
    text: 'W4 c=32 over the stream ≥ 1× the best other',
    subject: 'leaseq-stream',
    workload: 'w4c32',
    atLeast: 1,
  },
  {
    text: 'W4 c=32: work() over the stream ≥ 0.8× work() in-process (SQLite fsync)',
    subject: 'leaseq-stream',
    workload: 'w4c32',
    against: 'leaseq-sqlite-fsync',
    atLeast: 0.8,
  },
  {
    text: 'W4 c=32, SQLite fsync in-process ≥ 2× the best other',
    subject: 'leaseq-sqlite-fsync',
    workload: 'w4c32',
    atLeast: 2,
  },
  {
    text: 'W2 drain c=1 over HTTP ≥ 1× the best other',
    subject: 'leaseq-http',
    workload: 'w2c1',
    atLeast: 1,
  },
  {
    text: 'W2 drain c=32 over HTTP ≥ 1× the best other',
    subject: 'leaseq-http',
    workload: 'w2c32',
    atLeast: 1,
  },
  {
    text: 'W2 drain c=1, PostgreSQL ≥ 2× pg-boss',
    subject: 'leaseq-postgres',
    workload: 'w2c1',
    against: 'pg-boss',
    atLeast: 2,
  },
  {
    text: 'W2 drain c=32, PostgreSQL ≥ 2× pg-boss',
    subject: 'leaseq-postgres',
    workload: 'w2c32',
    against: 'pg-boss',
    atLeast: 2,
  },
  {
    text: 'W4 c=32, memory: work() ≥ 0.8× the raw API (W2 c=32)',
    subject: 'leaseq-memory',
    workload: 'w4c32',
    againstWorkload: 'w2c32',
    atLeast: 0.8,
  },
  {
    text: 'W4 c=32, SQLite fsync: work() ≥ 0.8× the raw API (W2 c=32)',
    subject: 'leaseq-sqlite-fsync',
    workload: 'w4c32',
    againstWorkload: 'w2c32',
    atLeast: 0.8,
  },
  {
    text: 'W4 c=1, SQLite fsync: work() ≥ 0.8× the raw API (W2 c=1)',
    subject: 'leaseq-sqlite-fsync',
    workload: 'w4c1',
    againstWorkload: 'w2c1',
    atLeast: 0.8,
  },
  {
    text: 'W3 latency p99, SQLite fsync ≤ the best other',
    subject: 'leaseq-sqlite-fsync',
    workload: 'w3p99',
    atMost: 1,
  },
];

export function verdicts(all: Figures, latencyJobs: number): string[] {
  const lines: string[] = [];
  for (const target of TARGETS) {
    const workload = workloads(latencyJobs).find((w) => w.key === target.workload);
    if (workload === undefined) continue;
    const mine = all[target.subject]?.[target.workload].summary?.median;
    const other = comparedWith(all, target, workload);
    if (mine === undefined || other === undefined) {
      lines.push(`SKIP  ${target.text}: not measured in this run`);
      continue;
    }
    const ratio = mine / other.median;
    const pass =
      (target.atLeast === undefined || ratio >= target.atLeast) &&
      (target.atMost === undefined || ratio <= target.atMost);
    const show = (value: number) =>
      workload.unit === 'ms' ? `${formatMs(value)} ms` : `${formatInteger(value)} jobs/s`;
    const otherName =
      target.againstWorkload === undefined
        ? label(other.subject)
        : `${target.againstWorkload.toUpperCase().replace('C', ' c=')}`;
    lines.push(
      `${pass ? 'PASS' : 'FAIL'}  ${target.text}: ${formatRatioAgainst(ratio, target.atLeast ?? target.atMost)} (${label(target.subject)} ${show(mine)}, ${otherName} ${show(other.median)})`,
    );
  }
  return lines;
}

/** What a target's figure is compared with: a system, the same system elsewhere, or the best other. */
function comparedWith(
  all: Figures,
  target: Target,
  workload: Workload,
): { subject: SubjectName; median: number } | undefined {
  const at = (subject: SubjectName, key: Workload['key']) => {
    const value = all[subject]?.[key].summary?.median;
    return value === undefined ? undefined : { subject, median: value };
  };
  if (target.againstWorkload !== undefined) return at(target.subject, target.againstWorkload);
  if (target.against !== undefined) return at(target.against, target.workload);
  return bestOther(all, workload);
}

/** The chart in the report: its SVG is written beside the markdown, `out` + `.svg`. */
export function chartLink(out: string): string {
  return `![W1 to W4 per system](${encodeURI(basename(out))}.svg)`;
}

export function chart(all: Figures, latencyJobs: number, subtitle: string): string {
  const panels: Panel[] = workloads(latencyJobs).map((workload) => ({
    title: `${workload.title}${workload.higherIsBetter ? ' (higher is better)' : ' (lower is better)'}`,
    unit: workload.unit,
    bars: (Object.keys(all) as SubjectName[]).map((subject) => {
      const summary = all[subject][workload.key].summary;
      return {
        label: label(subject),
        median: summary?.median ?? Number.NaN,
        min: summary?.min ?? Number.NaN,
        max: summary?.max ?? Number.NaN,
        highlight: isLeaseq(subject),
      };
    }),
  }));
  return barChart(
    'leaseq and other job queues: median of the runs, whisker min–max',
    subtitle,
    panels,
  );
}

export function growthTable(results: readonly GrowthResult[][]): string {
  const rows = results.map((runs) => {
    const first = runs[0] as GrowthResult;
    const med = (pick: (r: GrowthResult) => number | undefined) => {
      const values = runs.map(pick).filter((v): v is number => v !== undefined);
      return values.length === 0 ? undefined : median(values);
    };
    const bytes = (value: number | undefined) => (value === undefined ? '–' : formatInteger(value));
    return [
      `${first.mode} 10^${Math.round(Math.log10(first.backlog))}`,
      formatInteger(med((r) => r.fillPerSecond) ?? Number.NaN),
      formatInteger(med((r) => r.publishPerSecond) ?? Number.NaN),
      formatInteger(med((r) => r.reserveAckPerSecond) ?? Number.NaN),
      med((r) => r.statsMs)?.toFixed(2) ?? '–',
      bytes(med((r) => r.heapBytesPerJob)),
      bytes(med((r) => r.rssBytesPerJob)),
      bytes(med((r) => r.fileBytesPerJob)),
    ];
  });
  return markdownTable(
    [
      'storage, backlog',
      'fill jobs/s',
      'publish jobs/s at the backlog',
      'reserve+ack jobs/s at the backlog',
      'stats ms at the backlog',
      'heap B/job',
      'RSS B/job',
      'file B/job',
    ],
    rows,
  );
}

/** Per storage: the cost per job at the largest backlog over the cost at the smallest. */
export function growthVerdicts(results: readonly GrowthResult[][]): string[] {
  const lines: string[] = [];
  const modes = [...new Set(results.map((runs) => runs[0]?.mode))];
  for (const mode of modes) {
    const rows = results
      .filter((runs) => runs[0]?.mode === mode)
      .sort((a, b) => (a[0]?.backlog ?? 0) - (b[0]?.backlog ?? 0));
    const small = rows[0];
    const large = rows[rows.length - 1];
    if (small === undefined || large === undefined || small === large) continue;
    const cost = (runs: readonly GrowthResult[], pick: (r: GrowthResult) => number) =>
      1 / median(runs.map(pick));
    const growth = (pick: (r: GrowthResult) => number) => cost(large, pick) / cost(small, pick);
    const publish = growth((r) => r.publishPerSecond);
    const reserveAck = growth((r) => r.reserveAckPerSecond);
    const word = (ratio: number) =>
      ratio <= 1.25 ? `${formatRatio(ratio)} (flat)` : `${formatRatio(ratio)} (grows)`;
    const exponent = (runs: readonly GrowthResult[]) =>
      Math.round(Math.log10(runs[0]?.backlog ?? 1));
    // Results written before stats was timed have none.
    const statsTimes = (runs: readonly GrowthResult[]) =>
      runs.map((r) => r.statsMs).filter((v): v is number => v !== undefined);
    const stats =
      statsTimes(large).length > 0 && statsTimes(small).length > 0
        ? `; a stats call ${word(median(statsTimes(large)) / median(statsTimes(small)))}`
        : '';
    lines.push(
      `${mode}: time per job at a backlog of 10^${exponent(large)} over 10^${exponent(small)}: publish ${word(publish)}, reserve+ack ${word(reserveAck)}${stats}.`,
    );
  }
  return lines;
}
