import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Api } from '../../src/server/ui/web/api.js';
import { ManualClock } from '../../src/testing/index.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';

// A job whose last lease ran out is dead from the queue's next step on (R3, R13). A page of
// dead letters is a look-up, which takes no step (R34), so the dashboard's dead letters page
// reads the queue's figures (a step) first: it lists the job as the figures count it, with
// nothing else done on the queue.

let server: TestServer;
let clock: ManualClock;
let counter = 0;

beforeAll(async () => {
  clock = new ManualClock(1_000_000);
  server = await startTestServer({ clock });
});

afterAll(async () => {
  await server.close();
});

afterEach(() => {
  vi.unstubAllGlobals();
});

/** A queue whose one job's last lease ran out, with nothing done on the queue since. */
async function leaseEnded(): Promise<string> {
  const name = `deadpage${++counter}`;
  const queue = await server.broker.queue(name, { maxDeliveries: 1 });
  await queue.publish({ id: 'd' });
  expect(await queue.receive({ visibility: 1000 })).toHaveLength(1);
  clock.advance(5000);
  return name;
}

describe('the dashboard reading dead letters', () => {
  it('lists a job whose last lease ran out since the last step of its queue', async () => {
    const name = await leaseEnded();
    // The page asks the API relative to its own address.
    const fetchFromPage = globalThis.fetch;
    vi.stubGlobal('fetch', (url: string, init?: RequestInit) =>
      fetchFromPage(new URL(url, `${server.baseUrl}/ui/`), init),
    );
    const page = await new Api(() => undefined).deadLetters(name);
    expect(page.deadLetters).toMatchObject([{ id: 'd', reason: 'max-deliveries' }]);
    expect(page.next).toBeUndefined();
  });

  it('leaves the page read of the API a look-up that takes no step (R34)', async () => {
    const name = await leaseEnded();
    const read = await call(server.baseUrl, 'GET', `/v1/queues/${name}/dead-letters`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ deadLetters: [] });
    // Inspection takes no step either: the job is still in flight until one is taken.
    const queue = await server.broker.queue(name);
    expect((await queue.inspect()).active).toMatchObject([{ id: 'd' }]);
    expect(await queue.stats()).toMatchObject({ active: 0, dead: 1 });
    expect((await queue.deadLetterPage()).deadLetters).toMatchObject([{ id: 'd' }]);
  });
});
