import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { open, silentLogger, work } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

/**
 * docs/worker.md: blocking work shorter than a third of the session timeout keeps the session.
 * Handlers that block one after another (each started once the one before ended, through
 * promises alone) must not add up to one long block: the heartbeats go out between them and
 * their answers are read. Real time: what is measured is the event loop itself.
 */
const BLOCK_MS = 250;
const TIMEOUT_MS = 900;
const JOBS = 8;

let server: TestServer | undefined;
let broker: Broker | undefined;
afterEach(async () => {
  await broker?.close();
  await server?.close();
  broker = undefined;
  server = undefined;
});

const brokers: Record<string, () => Promise<Broker>> = {
  'in-process': () => open('memory:'),
  'over the stream': async () => {
    server = await startTestServer();
    return open(server.baseUrl);
  },
};

describe.each(Object.keys(brokers))('a worker with a session, %s', (kind) => {
  it(`handlers blocking the loop in turn, ${BLOCK_MS} ms each, keep a session of timeout ${TIMEOUT_MS} ms`, async () => {
    broker = await (brokers[kind] as () => Promise<Broker>)();
    const queue = await broker.queue('blocking', { visibility: 5000 });
    await queue.publishBatch(Array.from({ length: JOBS }, (_, index) => ({ id: `j${index}` })));
    const outcomes: string[] = [];
    const worker = await work(
      queue,
      async () => {
        const until = performance.now() + BLOCK_MS;
        while (performance.now() < until) {
          // Blocking the loop, as CPU-bound work does.
        }
      },
      { concurrency: 1, session: { timeout: TIMEOUT_MS }, logger: silentLogger, wait: 1000 },
    );
    worker.on('outcome', (record) => {
      outcomes.push(
        record.reason === undefined ? record.outcome : `${record.outcome}:${record.reason}`,
      );
    });
    try {
      await vi.waitFor(() => expect(outcomes.length).toBeGreaterThanOrEqual(JOBS), {
        timeout: 20_000,
      });
    } finally {
      await worker.close({ timeout: 1000 });
    }
    expect(outcomes).toEqual(Array.from({ length: JOBS }, () => 'acked'));
    expect(await queue.stats()).toMatchObject({ acks: JOBS, sessionReleases: 0 });
  }, 30_000);
});
