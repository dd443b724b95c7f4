import { connect, createServer, type Socket } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { openEngine } from '../../src/engine/index.js';
import {
  listeningBackends,
  POSTGRES_URL,
  postgresSkipReason,
  withPostgresClient,
} from '../crash/postgres.js';

/**
 * The wake-up listener's connection is lost while new connections to the database hang: the
 * link accepts them and never answers (a stalled load balancer, a half-dead route). Opening the
 * listener again must give up on such a connection, and a receiver that waits once the link has
 * healed must get the listener back: before, the hung attempt stayed pending for ever and no
 * receiver of the process was woken by another's publish again.
 */
const APP = `leaseq_stall_${process.pid}`;
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

/**
 * A TCP proxy to the tests' PostgreSQL. While `stallNew` is set it accepts new connections and
 * never answers them; those stay open and silent after it is cleared.
 */
async function stallingProxy() {
  const target = new URL(POSTGRES_URL);
  const sockets = new Set<Socket>();
  const state = { stallNew: false, stalled: 0 };
  const server = createServer((client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    if (state.stallNew) {
      state.stalled++;
      return;
    }
    const upstream = connect({ host: target.hostname, port: Number(target.port || 5432) });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(POSTGRES_URL);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  url.searchParams.set('application_name', APP);
  return {
    url: url.toString(),
    state,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The backends of this test's engine that listen for wake-ups. */
const listeners = () => listeningBackends(APP);

/** Waits for `condition` for up to `ms`; whether it came. */
async function within(ms: number, condition: () => Promise<boolean>): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

describe('PostgreSQL: the wake-up listener over a link that hangs', () => {
  it('gives up on a connection that is never answered, and comes back once the link heals', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const proxy = await stallingProxy();
    const clock = new ManualClock(1_000);
    const here = new EngineBroker(await openEngine(proxy.url), { clock });
    const elsewhere = await openEngine(POSTGRES_URL);
    const name = `listener-stall-${process.pid}`;
    const stop = new AbortController();
    try {
      const queue = await here.queue(name);
      const other = await elsewhere.queue(name);
      const [lost] = await listeners();
      expect(lost).toBeDefined();
      proxy.state.stallNew = true;
      await withPostgresClient((client) => client.query('SELECT pg_terminate_backend($1)', [lost]));
      expect(await within(5_000, async () => (await listeners()).length === 0)).toBe(true);
      // This receiver opens the listener again: the connection is accepted, never answered.
      const first = new AbortController();
      const during = queue.receive({ wait: 60_000, signal: first.signal });
      expect(await within(5_000, async () => proxy.state.stalled === 1)).toBe(true);
      // Healed: new connections are answered; the stalled one stays silent.
      proxy.state.stallNew = false;
      first.abort();
      expect(await during).toEqual([]);
      // A receiver that waits now gets the listener back (the manual clock never moves: only a
      // wake-up ends its wait).
      const receiving = queue.receive({ wait: 60_000, signal: stop.signal });
      expect(await within(12_000, async () => (await listeners()).length === 1)).toBe(true);
      await other.publish(clock.now(), { id: 'after-heal' });
      const bound = new Promise<'not woken'>((resolve) => {
        setTimeout(() => resolve('not woken'), 5_000).unref();
      });
      expect(await Promise.race([receiving, bound])).toMatchObject([{ id: 'after-heal' }]);
    } finally {
      stop.abort();
      await here.deleteQueue(name).catch(() => undefined);
      // The listener's stalled connection ends with the proxy's sockets, if it is still open.
      await Promise.race([
        Promise.all([here.close(), elsewhere.close()]),
        new Promise((resolve) => setTimeout(resolve, 10_000)),
      ]);
      await proxy.close();
      await here.close().catch(() => undefined);
    }
  }, 40_000);
});
