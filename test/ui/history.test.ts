import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { type Counters, newCounters } from '../../src/core/counters.js';
import type { QueueStats } from '../../src/core/types.js';
import { DETAILED_QUEUES, KEEP, StatsHistory } from '../../src/server/ui/web/history.js';

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

  it('gives no rate across a re-created queue’s counters', () => {
    const history = new StatsHistory();
    history.addQueue('a', stats(1000, 50));
    history.addQueue('a', stats(3000, 70));
    expect(history.rates('a')?.deliveries).toBe(10);
    history.addQueue('a', stats(5000, 4));
    expect(history.rates('a')?.deliveries).toBeNull();
    expect(history.series('a').rates.deliveries).toEqual([null, 10, null]);
  });

  it('at 5,000 queues keeps a few MB of numbers for 10 minutes of readings, not the readings', () => {
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

  it('keeps the full figures of at most DETAILED_QUEUES queues, the least recently read going first', () => {
    const history = new StatsHistory();
    for (let n = 0; n <= DETAILED_QUEUES; n += 1) history.addQueue(`q${n}`, stats(1000, 0));
    expect(history.detailed).toBe(DETAILED_QUEUES);
    expect(history.series('q0').times).toEqual([]);
    expect(history.series(`q${DETAILED_QUEUES}`).times).toEqual([1000]);
  });
});
