import type { AllStats, QueueStats } from './wire.js';

/** The counters whose rates the dashboard shows, per second. */
export const RATE_COUNTERS = [
  'published',
  'deliveries',
  'acks',
  'unworked',
  'redeliveries',
  'expiries',
  'extensions',
  'staleAcks',
] as const;

export type RateCounter = (typeof RATE_COUNTERS)[number];

export interface Sample {
  /** Server clock, ms. */
  at: number;
  stats: QueueStats;
  /** Per second since the previous sample; null for the first, or after a counter went back. */
  rates: Record<RateCounter, number | null>;
}

/** How many samples each queue keeps: 10 minutes at one every 2 s. */
const KEEP = 300;

function ratesBetween(before: Sample | undefined, stats: QueueStats) {
  const seconds = before === undefined ? 0 : (stats.queueTime - before.at) / 1000;
  return Object.fromEntries(
    RATE_COUNTERS.map((name) => {
      if (before === undefined || seconds <= 0) return [name, null];
      const delta = stats[name] - before.stats[name];
      // A re-created queue starts its counters again: no rate across that.
      return [name, delta < 0 ? null : delta / seconds];
    }),
  ) as Record<RateCounter, number | null>;
}

/**
 * The figures seen since the page opened, per queue: the charts and sparklines draw them and
 * the rates are counter deltas between two readings.
 */
export class StatsHistory {
  private readonly samples = new Map<string, Sample[]>();

  add(snapshot: AllStats): void {
    const seen = new Set<string>();
    for (const { name, stats } of snapshot.queues) {
      seen.add(name);
      const list = this.samples.get(name) ?? [];
      const last = list.at(-1);
      if (last !== undefined && last.at >= stats.queueTime) continue;
      list.push({ at: stats.queueTime, stats, rates: ratesBetween(last, stats) });
      if (list.length > KEEP) list.splice(0, list.length - KEEP);
      this.samples.set(name, list);
    }
    for (const name of [...this.samples.keys()]) if (!seen.has(name)) this.samples.delete(name);
  }

  of(queue: string): readonly Sample[] {
    return this.samples.get(queue) ?? [];
  }

  latest(queue: string): Sample | undefined {
    return this.samples.get(queue)?.at(-1);
  }
}
