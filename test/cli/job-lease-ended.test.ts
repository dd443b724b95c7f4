import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq job` shows a job as it stands: one whose last lease ran out is dead (R3, R13), as
// `leaseq dead list` shows it, not active with its deadline past.

let server: TestServer;
let env: Record<string, string>;
const clock = new ManualClock(1_000_000);

beforeAll(async () => {
  server = await startTestServer({ clock });
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

describe('leaseq job of a job whose last lease ran out', () => {
  it('shows it dead of max-deliveries, and its lease ended', async () => {
    const queue = await server.broker.queue('lease-ended', { maxDeliveries: 1, visibility: 100 });
    await queue.publish({ id: 'j1' });
    expect(await queue.receive()).toHaveLength(1);
    clock.advance(100);
    const shown = await leaseq(['job', 'lease-ended', 'j1'], { env });
    expect(shown.code).toBe(0);
    expect(shown.stdout.split('\n')[0]).toMatch(
      /^j1 {2}state=dead deliveries=1 reason=max-deliveries deadAt=\S+$/,
    );
    const json = await leaseq(['job', 'lease-ended', 'j1', '--json'], { env });
    expect(JSON.parse(json.stdout)).toMatchObject({ state: 'dead', reason: 'max-deliveries' });
  });

  it('leaves a live lease as it is', async () => {
    const queue = await server.broker.queue('lease-live', { maxDeliveries: 1, visibility: 100 });
    await queue.publish({ id: 'j2' });
    expect(await queue.receive()).toHaveLength(1);
    clock.advance(99);
    const json = await leaseq(['job', 'lease-live', 'j2', '--json'], { env });
    expect(JSON.parse(json.stdout)).toMatchObject({ state: 'active', token: 1 });
  });
});
