import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { type Counters, newCounters } from '../../src/core/counters.js';
import type { QueueStats } from '../../src/core/types.js';
import {
  DETAILED_QUEUES,
  KEEP,
  KEPT_QUEUES,
  StatsHistory,
} from '../../src/server/ui/web/history.js';

/** A queue's figures at `queueTime`, every counter at `count`. */
function stats(queueTime: number, count: number, ready = 0): QueueStats {
  const counters = newCounters();
  for (const name of Object.keys(counters) as (keyof Counters)[]) {
    if (typeof counters[name] === 'number')
      (counters as unknown as Record<string, number>)[name] = count;
  }
  return {
    queueTime,
    ready,
    delayed: 1,
    active: 2,
    dead: 3,
    waiting: 0,
    sessions: 0,
    paused: false,
    oldestReadyAge: 0,
    ...counters,
  };
}

const snapshot = (queues: number, reading: number) => {
  const template = stats(1_000_000 + reading * 2000, reading * 10, reading);
  return {
    queues: Array.from({ length: queues }, (_, n) => ({
      name: `q${String(n).padStart(4, '0')}`,
      stats: { ...template },
    })),
    total: queues,
  };
};

/**
 * The page of GET /v1/stats?offset=&limit=&contains= out of `queues` queues (q0000, q0001 …)
 * at `reading`, and the page asked for.
 */
const pageOf = (queues: number, reading: number, offset: number, limit: number, contains = '') => {
  const all = snapshot(queues, reading).queues.filter((entry) => entry.name.includes(contains));
  return {
    reading: { queues: all.slice(offset, offset + limit), total: all.length },
    page: { contains, offset, limit },
  };
};

describe('the dashboard’s history of figures', () => {
  it('keeps what a small install draws for every queue: depth, gauges and rates', () => {
    const history = new StatsHistory();
    history.add(snapshot(3, 0));
    expect(history.rates('q0001')?.published).toBeNull();
    history.add(snapshot(3, 1));
    history.add(snapshot(3, 1)); // the same reading again is not a new one
    history.add(snapshot(3, 2));
    // 10 more of every counter in 2 s.
    expect(history.rates('q0001')?.published).toBe(5);
    expect(history.depths('q0001')).toEqual([1, 2, 3]);
    const series = history.series('q0002');
    expect(series.times).toEqual([1_000_000, 1_002_000, 1_004_000]);
    expect(series.gauges.ready).toEqual([0, 1, 2]);
    expect(series.gauges.active).toEqual([2, 2, 2]);
    expect(series.rates.acks).toEqual([null, 5, 5]);
    // A queue gone from the readings is forgotten.
    history.add(snapshot(2, 3));
    expect(history.depths('q0002')).toEqual([]);
    expect(history.series('q0002').times).toEqual([]);
  });

  it('counts grouped jobs waiting behind their group in the depth, and charts them', () => {
    const history = new StatsHistory();
    // 100 jobs of one group: one ready, 99 waiting (R24).
    history.addQueue('grouped', { ...stats(1_000_000, 0, 1), delayed: 0, waiting: 99 });
    history.addQueue('grouped', { ...stats(1_002_000, 0, 0), delayed: 0, waiting: 98 });
    expect(history.depths('grouped')).toEqual([100, 98]);
    expect(history.series('grouped').gauges.waiting).toEqual([99, 98]);
  });

  it('gives no rate across a re-created queue’s counters', () => {
    const history = new StatsHistory();
    history.addQueue('a', stats(1000, 50));
    history.addQueue('a', stats(3000, 70));
    expect(history.rates('a')?.deliveries).toBe(10);
    history.addQueue('a', stats(5000, 4));
    expect(history.rates('a')?.deliveries).toBeNull();
    expect(history.series('a').rates.deliveries).toEqual([null, 10, null]);
  });

  // 320 readings of 5,000 queues: 1.6 million queue figures recorded, on the CPU. A few seconds
  // on 2 idle cores; several times that when the browser tests share them, past the default
  // 30 s. The work is fixed, so its bound is too.
  it('at 5,000 queues keeps a few MB of numbers for 10 minutes of readings, not the readings', {
    timeout: 120_000,
  }, () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const history = new StatsHistory();
    gc();
    const before = process.memoryUsage().heapUsed;
    // Each reading new objects, as JSON.parse makes them.
    for (let reading = 0; reading < KEEP + 20; reading += 1) history.add(snapshot(5000, reading));
    // A queue page read alone is charted in full; the others keep their depth line and rates.
    history.addQueue('q4999', stats(1_000_000 + (KEEP + 20) * 2000, 0));
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(history.detailed).toBeLessThanOrEqual(DETAILED_QUEUES);
    expect(history.depths('q0000')).toHaveLength(KEEP);
    expect(history.depths('q0000').at(-1)).toBe(KEEP + 19 + 1);
    expect(history.series('q0000').times).toEqual([]);
    expect(history.series('q4999').times).toHaveLength(1);
    // 300 readings of 5,000 whole QueueStats held 342 MB.
    expect(held, `${Math.round(held / 1e6)} MB`).toBeLessThan(40e6);
  });

  it('keeps the line of a queue missing from a page, and forgets it only when a whole reading lacks it', () => {
    const history = new StatsHistory();
    for (let reading = 0; reading < 3; reading += 1) {
      const first = pageOf(120, reading, 0, 50);
      history.add(first.reading, first.page);
    }
    expect(history.depths('q0010')).toEqual([1, 2, 3]);
    // The second page read, then a filtered one: the first page's queues are on no page read
    // now, and keep what they drew; the second's draw from their first reading.
    const second = pageOf(120, 3, 50, 50);
    history.add(second.reading, second.page);
    const filtered = pageOf(120, 4, 0, 50, 'q01');
    history.add(filtered.reading, filtered.page);
    expect(filtered.reading.total).toBe(20);
    expect(history.depths('q0010')).toEqual([1, 2, 3]);
    expect(history.rates('q0010')?.published).toBe(5);
    expect(history.depths('q0060')).toEqual([4]);
    expect(history.depths('q0110')).toEqual([5]);
    // Back on the first page, the lines go on from where they were.
    const again = pageOf(120, 5, 0, 50);
    history.add(again.reading, again.page);
    expect(history.depths('q0010')).toEqual([1, 2, 3, 6]);
    expect(history.rates('q0010')?.published).toBe(5);
    // A first page that holds every queue (no filter, 30 of 30) is a whole reading: the
    // queues not in it are gone.
    const whole = pageOf(30, 6, 0, 50);
    history.add(whole.reading, whole.page);
    expect(history.depths('q0010')).toEqual([1, 2, 3, 6, 7]);
    expect(history.depths('q0060')).toEqual([]);
    expect(history.kept).toBe(30);
  });

  it('charts every queue of a small install read in pages, and no queue of a large one', () => {
    const small = new StatsHistory();
    const first = pageOf(DETAILED_QUEUES, 0, 0, 50);
    small.add(first.reading, first.page);
    expect(small.series('q0049').times).toEqual([1_000_000]);
    expect(small.detailed).toBe(50);
    const large = new StatsHistory();
    for (const page of [pageOf(5000, 0, 0, 50), pageOf(5000, 1, 0, 50, 'q00')]) {
      large.add(page.reading, page.page);
    }
    expect(large.detailed).toBe(0);
    expect(large.depths('q0049')).toEqual([1, 2]);
  });

  it('keeps the lines of at most KEPT_QUEUES queues read in pages, the least recently read going first', () => {
    const history = new StatsHistory();
    const queues = KEPT_QUEUES + 1000;
    for (let offset = 0; offset < queues; offset += 50) {
      const { reading, page } = pageOf(queues, 1 + offset / 50, offset, 50);
      history.add(reading, page);
    }
    expect(history.kept).toBe(KEPT_QUEUES);
    expect(history.depths('q0000')).toEqual([]);
    expect(history.depths('q0999')).toEqual([]);
    expect(history.depths('q1000')).toHaveLength(1);
    // A queue read again is the most recent: the next new one pushes out another.
    const { reading, page } = pageOf(queues, 500, 1000, 1);
    history.add(reading, page);
    history.addQueue('new', stats(2_000_000, 0));
    expect(history.depths('q1000')).toHaveLength(2);
    expect(history.depths('q1001')).toEqual([]);
    expect(history.kept).toBe(KEPT_QUEUES);
  });

  it('keeps the full figures of at most DETAILED_QUEUES queues, the least recently read going first', () => {
    const history = new StatsHistory();
    for (let n = 0; n <= DETAILED_QUEUES; n += 1) history.addQueue(`q${n}`, stats(1000, 0));
    expect(history.detailed).toBe(DETAILED_QUEUES);
    expect(history.series('q0').times).toEqual([]);
    expect(history.series(`q${DETAILED_QUEUES}`).times).toEqual([1000]);
  });
});
