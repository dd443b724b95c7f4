import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeadLetterOrigin, Delivery } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq job` and `leaseq dead list` of a job that came by dead-lettering (R26) say where, why
// and when it died, as its JSON and the dashboard do: its history alone may not tell (a
// delivery given back on its last try is recorded as requeued, a lease that ran out as expired).

let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

const only = (deliveries: Delivery[]): Delivery => {
  expect(deliveries).toHaveLength(1);
  return deliveries[0] as Delivery;
};

const isoOf = (origin: DeadLetterOrigin | undefined): string => {
  expect(origin).toBeDefined();
  return new Date((origin as DeadLetterOrigin).at).toISOString();
};

describe('the origin of a job that came by dead-lettering, on the command line', () => {
  it('job shows the origin queue, reason and time', async () => {
    const dlq = await server.broker.queue('origin-dlq');
    const source = await server.broker.queue('origin-src', {
      maxDeliveries: 1,
      deadLetterQueue: 'origin-dlq',
    });
    await source.publish({ id: 'j1' });
    await source.nack(only(await source.receive()).token);
    const moved = await dlq.job('j1');
    expect(moved?.origin).toMatchObject({ queue: 'origin-src', reason: 'max-deliveries' });
    const at = isoOf(moved?.origin);
    const shown = await leaseq(['job', 'origin-dlq', 'j1'], { env });
    expect(shown.code).toBe(0);
    expect(shown.stdout.split('\n')[0]).toBe(
      `j1  state=ready deliveries=0 from=origin-src originReason=max-deliveries originAt=${at}`,
    );
  });

  it('dead list shows the origin of a job that died again in the dead-letter queue', async () => {
    const dlq = await server.broker.queue('again-dlq', { maxDeliveries: 1 });
    const source = await server.broker.queue('again-src', { deadLetterQueue: 'again-dlq' });
    await source.publish({ id: 'j2' });
    await source.nack(only(await source.receive()).token, { requeue: false, reason: 'bad' });
    await dlq.nack(only(await dlq.receive()).token, { requeue: false, reason: 'worse' });
    const [dead] = await dlq.deadLetters();
    const at = isoOf(dead?.origin);
    const deadAt = new Date((dead as { deadAt: number }).deadAt).toISOString();
    const listed = await leaseq(['dead', 'list', 'again-dlq'], { env });
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toBe(
      `j2  reason=worse deliveries=1 deadAt=${deadAt} from=again-src originReason=bad originAt=${at}`,
    );
  });
});
