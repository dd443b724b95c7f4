import { expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/clock.js';
import { type Scheduled, WakeScheduler } from '../../src/worker/wake-scheduler.js';

const flush = async () => {
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
};

function item(name: string, woken: string[]): Scheduled {
  return { heapIndex: -1, wakeAt: 0, wake: () => woken.push(name) };
}

it('wakes items at their time, in order, on one armed sleep', async () => {
  const clock = new ManualClock();
  const scheduler = new WakeScheduler(clock);
  const woken: string[] = [];
  scheduler.schedule(item('b', woken), 200);
  scheduler.schedule(item('c', woken), 300);
  scheduler.schedule(item('a', woken), 100);
  expect(clock.waiting).toBe(1);
  clock.set(99);
  await flush();
  expect(woken).toEqual([]);
  clock.set(200);
  await flush();
  expect(woken).toEqual(['a', 'b']);
  expect(clock.waiting).toBe(1);
  clock.set(1000);
  await flush();
  expect(woken).toEqual(['a', 'b', 'c']);
  expect(scheduler.size).toBe(0);
});

it('moves a scheduled item, and a cancelled one is never woken', async () => {
  const clock = new ManualClock();
  const scheduler = new WakeScheduler(clock);
  const woken: string[] = [];
  const a = item('a', woken);
  const b = item('b', woken);
  scheduler.schedule(a, 100);
  scheduler.schedule(b, 150);
  scheduler.schedule(a, 400);
  scheduler.cancel(b);
  clock.set(300);
  await flush();
  expect(woken).toEqual([]);
  clock.set(400);
  await flush();
  expect(woken).toEqual(['a']);
});

it('an item rescheduled while it is woken waits for the next turn; stop ends the timer', async () => {
  const clock = new ManualClock();
  const scheduler = new WakeScheduler(clock);
  let wakes = 0;
  const again: Scheduled = {
    heapIndex: -1,
    wakeAt: 0,
    wake: () => {
      wakes += 1;
      if (wakes < 3) scheduler.schedule(again, clock.now());
    },
  };
  scheduler.schedule(again, 10);
  clock.set(10);
  await flush();
  expect(wakes).toBe(3);
  scheduler.schedule(again, 50);
  scheduler.stop();
  expect(clock.waiting).toBe(0);
  clock.set(100);
  await flush();
  expect(wakes).toBe(3);
});

it('disarmIfEmpty ends the timer only when nothing waits', async () => {
  const clock = new ManualClock();
  const scheduler = new WakeScheduler(clock);
  const woken: string[] = [];
  const a = item('a', woken);
  scheduler.schedule(a, 100);
  scheduler.disarmIfEmpty();
  expect(clock.waiting).toBe(1);
  scheduler.cancel(a);
  expect(clock.waiting).toBe(1);
  scheduler.disarmIfEmpty();
  expect(clock.waiting).toBe(0);
  scheduler.schedule(a, 200);
  clock.set(200);
  await flush();
  expect(woken).toEqual(['a']);
});
