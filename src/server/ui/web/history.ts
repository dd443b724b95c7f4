import type { AllStats, QueueStats, StatsQuery } from './wire.js';

/** The counters whose rates the dashboard shows, per second. */
export const RATE_COUNTERS = [
  'published',
  // R31: jobs of publishes refused with QUEUE_FULL (the queue at its maxLength).
  'refused',
  'deliveries',
  'acks',
  'unworked',
  'redeliveries',
  'expiries',
  'extensions',
  'staleAcks',
] as const;

export type RateCounter = (typeof RATE_COUNTERS)[number];

/** Per second since the previous reading; null for the first, or after a counter went back. */
export type Rates = Record<RateCounter, number | null>;

/** The figures a queue's charts draw over time (besides the rates). */
export const GAUGES = ['ready', 'waiting', 'delayed', 'active', 'dead'] as const;

export type Gauge = (typeof GAUGES)[number];

/** A queue's charted readings, oldest first, as the charts take them. */
export interface Series {
  /** Server clock, ms. */
  times: number[];
  gauges: Record<Gauge, number[]>;
  rates: Record<RateCounter, (number | null)[]>;
}

/** How many readings each queue keeps: 10 minutes at one every 2 s. */
export const KEEP = 300;

/**
 * How many queues keep every charted figure (a queue page's charts). Beyond it, a queue keeps
 * its depth line and latest rates alone, which is what the overview draws: at 5,000 queues the
 * whole figures of every reading would be hundreds of MB.
 */
export const DETAILED_QUEUES = 100;

/**
 * How many queues keep their depth line and rates: those of the overview's pages read since the
 * page opened, the least recently read going first. The lines of 5,000 queues are a few MB
 * (test/ui/history.test.ts): paging through any number of queues, or through queues made and
 * deleted meanwhile, holds no more than that.
 */
export const KEPT_QUEUES = 5000;

/** The last `KEEP` numbers pushed, in a fixed buffer (NaN stands for null). */
class Ring {
  private readonly values: Float64Array;
  private next = 0;
  length = 0;

  constructor(capacity: number) {
    this.values = new Float64Array(capacity);
  }

  push(value: number): void {
    this.values[this.next] = value;
    this.next = (this.next + 1) % this.values.length;
    if (this.length < this.values.length) this.length += 1;
  }

  toArray(): number[] {
    const start = (this.next - this.length + this.values.length) % this.values.length;
    const out = new Array<number>(this.length);
    for (let n = 0; n < this.length; n += 1) {
      out[n] = this.values[(start + n) % this.values.length] as number;
    }
    return out;
  }
}

/** What every queue keeps: its last counters (for rates), latest rates and depth line. */
interface Line {
  at: number;
  counters: Float64Array;
  rates: Rates;
  /** Ready + waiting + delayed at each reading: every job not yet handed out. */
  depth: Ring;
}

/** What a charted queue keeps besides: every figure its charts draw, at each reading. */
interface Detail {
  times: Ring;
  gauges: Record<Gauge, Ring>;
  rates: Record<RateCounter, Ring>;
}

const none = (): Rates =>
  Object.fromEntries(RATE_COUNTERS.map((name) => [name, null])) as unknown as Rates;

function newDetail(): Detail {
  return {
    times: new Ring(KEEP),
    gauges: Object.fromEntries(GAUGES.map((name) => [name, new Ring(KEEP)])) as Record<Gauge, Ring>,
    rates: Object.fromEntries(RATE_COUNTERS.map((name) => [name, new Ring(KEEP)])) as Record<
      RateCounter,
      Ring
    >,
  };
}

/**
 * The figures seen since the page opened, per queue: the charts and sparklines draw them and
 * the rates are counter deltas between two readings. Only the numbers drawn are kept, never the
 * readings themselves.
 */
export class StatsHistory {
  private readonly lines = new Map<string, Line>();
  /** In the order last read alone (a queue's page), the least recent first. */
  private readonly details = new Map<string, Detail>();

  /**
   * A reading of GET /v1/stats: of every queue the key can see, or of the page `page` asked for.
   * Only a reading that holds every queue (no filter, the first page, nothing past it) says that
   * a queue not in it is gone; a queue missing from a page is merely on another page, and keeps
   * its line to draw on when its page is read again.
   */
  add(reading: AllStats, page?: StatsQuery): void {
    const seen = new Set<string>();
    const unfiltered = page === undefined || page.contains === '';
    const whole =
      page === undefined ||
      (unfiltered && page.offset === 0 && reading.queues.length >= reading.total);
    // A small install charts every queue from its first reading, as it always did.
    const all = unfiltered && reading.total <= DETAILED_QUEUES;
    for (const { name, stats } of reading.queues) {
      seen.add(name);
      this.record(name, stats, all);
    }
    if (!whole) return;
    for (const name of [...this.lines.keys()]) {
      if (!seen.has(name)) {
        this.lines.delete(name);
        this.details.delete(name);
      }
    }
  }

  /** A reading of one queue (GET /v1/queues/{name}/stats): its page is open, so it is charted. */
  addQueue(name: string, stats: QueueStats): void {
    const detail = this.details.get(name);
    if (detail !== undefined) {
      this.details.delete(name);
      this.details.set(name, detail);
    }
    this.record(name, stats, true);
  }

  /** The depth (ready + waiting + delayed) at each reading, oldest first. */
  depths(queue: string): number[] {
    return this.lines.get(queue)?.depth.toArray() ?? [];
  }

  /** The rates at the latest reading (null before two). */
  rates(queue: string): Rates | undefined {
    return this.lines.get(queue)?.rates;
  }

  /** Every charted figure since the queue was first charted. */
  series(queue: string): Series {
    const detail = this.details.get(queue);
    const nullable = (ring: Ring | undefined) =>
      (ring?.toArray() ?? []).map((value) => (Number.isNaN(value) ? null : value));
    return {
      times: detail?.times.toArray() ?? [],
      gauges: Object.fromEntries(
        GAUGES.map((name) => [name, detail?.gauges[name].toArray() ?? []]),
      ) as Record<Gauge, number[]>,
      rates: Object.fromEntries(
        RATE_COUNTERS.map((name) => [name, nullable(detail?.rates[name])]),
      ) as Record<RateCounter, (number | null)[]>,
    };
  }

  /** How many queues keep every charted figure (at most DETAILED_QUEUES). */
  get detailed(): number {
    return this.details.size;
  }

  /** How many queues keep their depth line and rates (at most KEPT_QUEUES). */
  get kept(): number {
    return this.lines.size;
  }

  private record(name: string, stats: QueueStats, chart: boolean): void {
    let line = this.lines.get(name);
    if (line !== undefined && line.at >= stats.queueTime) return;
    const rates = line === undefined ? none() : ratesBetween(line, stats);
    if (line === undefined) {
      line = {
        at: 0,
        counters: new Float64Array(RATE_COUNTERS.length),
        rates,
        depth: new Ring(KEEP),
      };
      // The least recently read goes: pages of queues come and go, the memory stays bounded.
      if (this.lines.size >= KEPT_QUEUES) {
        const oldest = this.lines.keys().next().value;
        if (oldest !== undefined) this.lines.delete(oldest);
      }
    } else {
      this.lines.delete(name);
    }
    this.lines.set(name, line);
    line.at = stats.queueTime;
    line.rates = rates;
    RATE_COUNTERS.forEach((counter, index) => {
      (line as Line).counters[index] = stats[counter];
    });
    // Grouped jobs behind an earlier one of their group (R24) are queued work too.
    line.depth.push(stats.ready + stats.waiting + stats.delayed);

    let detail = this.details.get(name);
    if (detail === undefined && chart) {
      detail = newDetail();
      this.details.set(name, detail);
      // The least recently charted goes: a few queue pages, not every queue, keep it all.
      if (this.details.size > DETAILED_QUEUES) {
        const oldest = this.details.keys().next().value;
        if (oldest !== undefined) this.details.delete(oldest);
      }
    }
    if (detail === undefined) return;
    detail.times.push(stats.queueTime);
    for (const gauge of GAUGES) detail.gauges[gauge].push(stats[gauge]);
    for (const counter of RATE_COUNTERS) detail.rates[counter].push(rates[counter] ?? Number.NaN);
  }
}

function ratesBetween(before: Line, stats: QueueStats): Rates {
  const seconds = (stats.queueTime - before.at) / 1000;
  return Object.fromEntries(
    RATE_COUNTERS.map((name, index) => {
      if (seconds <= 0) return [name, null];
      const delta = stats[name] - (before.counters[index] as number);
      // A re-created queue starts its counters again: no rate across that.
      return [name, delta < 0 ? null : delta / seconds];
    }),
  ) as unknown as Rates;
}
