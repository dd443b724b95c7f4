import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/testing/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// A job whose last delivery's lease ran out is dead from then on (R3, R13): the queue's next
// step dead-letters it. `leaseq dead redrive <queue>` without ids redrives every job dead when
// it starts, as the server's redrive of every dead job does, also one no step has seen dead yet;
// `leaseq dead list` lists it.

let server: TestServer;
let clock: ManualClock;
let env: Record<string, string>;
let counter = 0;
const fresh = () => `leaseended${++counter}`;

beforeAll(async () => {
  clock = new ManualClock(1_000_000);
  server = await startTestServer({ clock });
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

describe('dead redrive of every dead job', () => {
  for (const transport of ['stream', 'http']) {
    it(`redrives the jobs whose last lease ran out since the last step (${transport})`, async () => {
      const name = fresh();
      const queue = await server.broker.queue(name, { maxDeliveries: 1 });
      await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
      expect(await queue.receive({ max: 2, visibility: 1000 })).toHaveLength(2);
      // Both leases end, with nothing done on the queue since.
      clock.advance(5000);
      const run = await leaseq(['dead', 'redrive', name, '--transport', transport], { env });
      expect(run).toMatchObject({ code: 0, stdout: 'redriven 2 jobs\n' });
      expect(await queue.stats()).toMatchObject({ ready: 2, dead: 0, redriven: 2 });
    });
  }

  it('counts them in --json too', async () => {
    const name = fresh();
    const queue = await server.broker.queue(name, { maxDeliveries: 1 });
    await queue.publish({ id: 'c' });
    expect(await queue.receive({ visibility: 1000 })).toHaveLength(1);
    clock.advance(5000);
    const run = await leaseq(['dead', 'redrive', name, '--json'], { env });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ redriven: 1 });
    expect(await queue.stats()).toMatchObject({ ready: 1, dead: 0 });
  });
});

describe('dead list', () => {
  /** A queue whose one job's last lease ran out, with nothing done on the queue since. */
  async function leaseEnded(): Promise<string> {
    const name = fresh();
    const queue = await server.broker.queue(name, { maxDeliveries: 1 });
    await queue.publish({ id: 'd' });
    expect(await queue.receive({ visibility: 1000 })).toHaveLength(1);
    clock.advance(5000);
    return name;
  }

  for (const transport of ['stream', 'http']) {
    it(`lists the jobs whose last lease ran out since the last step (${transport})`, async () => {
      const run = await leaseq(['dead', 'list', await leaseEnded(), '--transport', transport], {
        env,
      });
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^d {2}reason=max-deliveries deliveries=1 /);
    });
  }

  it('lists them in a page too', async () => {
    const run = await leaseq(['dead', 'list', await leaseEnded(), '--limit', '1', '--json'], {
      env,
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ deadLetters: [{ id: 'd' }], next: null });
  });
});
