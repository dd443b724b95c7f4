import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { ClosedError, type PublishInput } from '../../src/core/index.js';
import { SqliteConnection } from '../../src/engine/sqlite/sqlite-connection.js';
import { open } from '../../src/index.js';
import { DEFAULT_CONFIG, type ServerConfig, startServer } from '../../src/server/index.js';
import { call, withWrappedQueues } from './helpers.js';

const config = (overrides: Partial<ServerConfig> = {}): ServerConfig => ({
  ...DEFAULT_CONFIG,
  storage: 'memory:',
  port: 0,
  ...overrides,
});

/** Log lines written to a string array. */
function logSink() {
  const lines: Record<string, unknown>[] = [];
  // The server writes its lines in blocks of several.
  const write = (text: string) => {
    for (const line of text.split('\n')) if (line !== '') lines.push(JSON.parse(line));
  };
  return { lines, destination: { write } };
}

/** A memory broker whose publishes wait until `release()` is called. */
async function heldBroker() {
  const real = await open('memory:');
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let entered = () => {};
  const publishing = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const broker = withWrappedQueues(real, (queue) =>
    Object.assign(Object.create(queue), {
      publish: async (input: PublishInput) => {
        entered();
        await held;
        return queue.publish(input);
      },
    }),
  );
  return { broker, real, release, publishing };
}

describe('startServer', () => {
  it('says at start what it serves, where its receipt secret comes from, and that only loopback is served', async () => {
    const { lines, destination } = logSink();
    const server = await startServer(config(), { logDestination: destination });
    await server.close();
    const messages = lines.map((line) => line.msg);
    expect(messages).toContain(
      'no receiptSecret configured: receipts are signed with the secret kept in the storage',
    );
    expect(messages).toContain(
      'no API keys configured: every request is allowed, so only loopback is served',
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: `leaseq listening on ${server.url}`, storage: 'memory:' }),
    );
    expect(messages.at(-1)).toBe('stopped');
  });

  it('writes its start-up line, with the port picked and its pid, at every level but silent', async () => {
    for (const logLevel of ['warn', 'error', 'fatal', 'silent'] as const) {
      const { lines, destination } = logSink();
      const server = await startServer(config({ logLevel }), { logDestination: destination });
      await server.close();
      const started = lines.filter((line) => line.msg === `leaseq listening on ${server.url}`);
      expect(started).toEqual(
        logLevel === 'silent' ? [] : [expect.objectContaining({ pid: process.pid, level: 30 })],
      );
      expect(lines.some((line) => (line.level as number) < 40 && line !== started[0])).toBe(false);
    }
  });

  it('on close answers waiting long polls empty, finishes requests in flight, refuses new ones, then closes the storage', async () => {
    const { broker, real, release, publishing } = await heldBroker();
    const { destination } = logSink();
    const server = await startServer(config({ receiptSecret: 'x'.repeat(32) }), {
      broker,
      logDestination: destination,
    });
    const { url } = server;
    await call(url, 'PUT', '/v1/queues/q', { body: {} });
    const polls = [1, 2].map(() =>
      call(url, 'POST', '/v1/queues/q/receive', { body: { wait: 10_000 } }),
    );
    const inFlight = call(url, 'POST', '/v1/queues/q/jobs', { body: { id: 'late' } });
    await publishing;
    const started = Date.now();
    const closing = server.close();
    const answers = await Promise.all(polls);
    expect(answers.map((a) => [a.status, a.body])).toEqual([
      [200, { deliveries: [] }],
      [200, { deliveries: [] }],
    ]);
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(call(url, 'GET', '/healthz')).rejects.toThrow();
    release();
    expect((await inFlight).body).toEqual({ id: 'late', duplicate: false });
    await closing;
    await expect(Promise.resolve().then(() => real.listQueues())).rejects.toBeInstanceOf(
      ClosedError,
    );
  });

  /** A server of `broker` with a request held in flight cuts it at its shutdownTimeoutMs. */
  async function expectCutAtTimeout(broker: Broker, publishing: Promise<void>): Promise<void> {
    const { lines, destination } = logSink();
    const server = await startServer(config({ shutdownTimeoutMs: 100 }), {
      broker,
      logDestination: destination,
    });
    await call(server.url, 'PUT', '/v1/queues/q', { body: {} });
    const stuck = call(server.url, 'POST', '/v1/queues/q/jobs', { body: {} }).catch(
      (error: Error) => error,
    );
    await publishing;
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await stuck).toBeInstanceOf(Error);
    expect(lines.map((line) => line.msg)).toContain(
      'requests still in flight after the shutdown timeout: cutting them',
    );
  }

  it('cuts requests still in flight after shutdownTimeoutMs', async () => {
    const { broker, publishing } = await heldBroker();
    await expectCutAtTimeout(broker, publishing);
  });

  it('cuts requests after shutdownTimeoutMs even while a scheduler pass waits for the storage', async () => {
    const { broker, publishing } = await heldBroker();
    // The scheduler's pass under way waits for the storage (a lock another transaction holds).
    const real = broker.scheduler?.bind(broker);
    const scheduled = Object.assign(Object.create(broker), {
      scheduler: () => {
        const scheduler = real?.();
        if (scheduler === undefined) throw new Error('an in-process broker has a scheduler');
        return Object.assign(scheduler, { stop: () => new Promise<void>(() => {}) });
      },
    });
    await expectCutAtTimeout(scheduled, publishing);
  });

  it('on close answers waiting long polls and refuses new connections at once, though a scheduler pass still waits for the storage', async () => {
    const real = await open('memory:');
    // The scheduler's pass under way waits for the storage (a lock another transaction holds)
    // until the shutdown timeout.
    const schedulerOf = real.scheduler?.bind(real);
    const broker = Object.assign(Object.create(real), {
      scheduler: () => {
        const scheduler = schedulerOf?.();
        if (scheduler === undefined) throw new Error('an in-process broker has a scheduler');
        return Object.assign(scheduler, { stop: () => new Promise<void>(() => {}) });
      },
    });
    const { lines, destination } = logSink();
    const server = await startServer(config({ shutdownTimeoutMs: 1000 }), {
      broker,
      logDestination: destination,
    });
    const { url } = server;
    await call(url, 'PUT', '/v1/queues/q', { body: {} });
    const poll = call(url, 'POST', '/v1/queues/q/receive', { body: { wait: 10_000 } });
    // The long poll is waiting once a receive without wait has been answered after it.
    await call(url, 'POST', '/v1/queues/q/receive', { body: {} });
    const closing = server.close();
    const answer = await poll;
    const cutBefore = lines.some((line) => String(line.msg).includes('cutting them'));
    await expect(call(url, 'GET', '/healthz')).rejects.toThrow();
    await closing;
    expect([answer.status, answer.body]).toEqual([200, { deliveries: [] }]);
    // Answered as the shutdown began, not only once the timeout cut what still waited.
    expect(cutBefore).toBe(false);
  });

  it('fails to start on a port in use, and closes the storage it opened', async () => {
    const first = await startServer(config(), { logDestination: logSink().destination });
    const real = await open('memory:');
    await expect(
      startServer(config({ port: first.port }), {
        broker: real,
        logDestination: logSink().destination,
      }),
    ).rejects.toThrow(/EADDRINUSE/);
    await expect(Promise.resolve().then(() => real.listQueues())).rejects.toBeInstanceOf(
      ClosedError,
    );
    await first.close();
  });

  it('on SQLite fsync syncs the WAL beside its event loop, which goes on serving meanwhile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-server-sync-'));
    const loopFree: boolean[] = [];
    const syncCommitted = SqliteConnection.prototype.syncCommitted;
    const spy = vi
      .spyOn(SqliteConnection.prototype, 'syncCommitted')
      .mockImplementation(async function (this: SqliteConnection) {
        const sync = syncCommitted.call(this);
        // A sync that blocks the loop has ended when its promise settles within microtasks.
        let settled = false;
        void sync.then(() => (settled = true));
        for (let turn = 0; turn < 5; turn++) await Promise.resolve();
        loopFree.push(!settled);
        return sync;
      });
    const server = await startServer(
      config({ storage: `sqlite:${join(dir, 'q.db')}`, durability: 'fsync' }),
      { logDestination: logSink().destination },
    );
    try {
      await call(server.url, 'PUT', '/v1/queues/jobs', { body: {} });
      const published = await call(server.url, 'POST', '/v1/queues/jobs/jobs', {
        body: { payload: 1 },
      });
      expect(published.status).toBe(200);
      expect(loopFree.length).toBeGreaterThanOrEqual(1);
      expect(loopFree.every((free) => free)).toBe(true);
    } finally {
      await server.close();
      spy.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
