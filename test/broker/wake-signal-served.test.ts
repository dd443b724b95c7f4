import { describe, expect, it } from 'vitest';
import { WakeSignal } from '../../src/broker/wake-signal.js';

// A served wake-up (the engine already offered the jobs to every waiting receive): a receiver in
// a session of its own looks only if it says it must; the first of a lane of others looks, as at
// any wake-up; one the engine did not see (`unseen`) looks whatever it says.
describe('WakeSignal.wakeServed', () => {
  function park(signal: WakeSignal, lane: string, place: number, served?: (at: number) => boolean) {
    const woken = { value: false };
    const stop = new AbortController();
    void signal.next('q', lane, stop.signal, place, undefined, served).then(() => {
      if (!stop.signal.aborted) woken.value = true;
    });
    return { woken, stop };
  }

  it('wakes the first of a lane without sessions, and in sessions only those that must look or were unseen', async () => {
    const signal = new WakeSignal();
    const told: number[] = [];
    const firstPlain = park(signal, 'manual:', 1);
    const secondPlain = park(signal, 'manual:', 2);
    const quiet = park(signal, 'manual:s1', 3, (at) => {
      told.push(at);
      return false;
    });
    const looking = park(signal, 'manual:s2', 4, () => true);
    const unseen = park(signal, 'manual:s3', 5, () => false);
    signal.wakeServed('q', 1_100, [5]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(firstPlain.woken.value).toBe(true);
    expect(secondPlain.woken.value).toBe(false);
    expect(quiet.woken.value).toBe(false);
    expect(told).toEqual([1_100]);
    expect(looking.woken.value).toBe(true);
    expect(unseen.woken.value).toBe(true);
    // A plain wake-up still reaches the first of every lane, the quiet one included.
    signal.wake('q');
    await new Promise((resolve) => setImmediate(resolve));
    expect(secondPlain.woken.value).toBe(true);
    expect(quiet.woken.value).toBe(true);
    for (const parked of [firstPlain, secondPlain, quiet, looking, unseen]) parked.stop.abort();
  });
});
