import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openRemote, type RemoteBroker } from '../../src/client/index.js';
import { silentLogger, work } from '../../src/index.js';
import { ServerProcess } from '../faults/server-process.js';
import { call } from '../server/helpers.js';
import { until } from '../until.js';

const CONSUMER = fileURLToPath(new URL('./consumer-child.mjs', import.meta.url));

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function storage(): string {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-stream-kill-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return `sqlite:${join(dir, 'leaseq.db')}`;
}

async function serve(spec: { storage: string; port?: number }): Promise<ServerProcess> {
  const server = new ServerProcess({ ...spec, durability: 'os' }, 'server');
  cleanups.push(() => server.kill());
  await server.listening();
  return server;
}

async function client(url: string): Promise<RemoteBroker> {
  const broker = await openRemote(url);
  cleanups.push(() => broker.close());
  return broker;
}

/** A consumer child process; resolves with its first line once it holds its deliveries. */
function startConsumer(url: string, queue: string, concurrency: number) {
  const child: ChildProcess = spawn(process.execPath, [CONSUMER, url, queue, String(concurrency)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let output = '';
  const ready = new Promise<{ held: number; session: number }>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split('\n')[0];
      if (output.includes('\n') && line !== undefined) resolve(JSON.parse(line));
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('exit', () => reject(new Error(`the consumer exited early:\n${output}`)));
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return { child, ready, exited };
}

describe('a stream connection killed mid-stream loses nothing and leaks no lease', () => {
  it('client SIGKILL: its session deliveries come back at once, the others at their deadline', async () => {
    const server = await serve({ storage: storage() });
    const url = server.url as string;
    const broker = await client(url);
    const queue = await broker.queue('kill-client', { visibility: 1500 });
    const ids = Array.from({ length: 10 }, (_, index) => `job-${index}`);
    await queue.publishBatch(ids.map((id) => ({ id })));
    const consumer = startConsumer(url, 'kill-client', 4);
    expect(await consumer.ready).toEqual({ held: 4, session: 2 });
    expect(await queue.stats()).toMatchObject({ active: 6, sessions: 1 });
    const live = await queue.deliveries();
    const lastDeadline = Math.max(...live.map((delivery) => delivery.deadline));
    consumer.child.kill('SIGKILL');
    await consumer.exited;
    // R12: the connection's session ends with it, and its two deliveries are ready again.
    await until(async () => (await queue.stats()).sessions === 0, {
      what: 'the session of the killed consumer to end',
      timeout: 5000,
      interval: 50,
    });
    const afterKill = await queue.stats();
    expect(afterKill.active).toBeLessThanOrEqual(4);
    // The worker's own leases end at their deadline (it renewed them while alive), not later.
    await until(async () => (await queue.stats()).active === 0, {
      what: 'its leases to end',
      timeout: lastDeadline - Date.now() + 5000,
      interval: 50,
    });
    expect(Date.now()).toBeLessThan(
      Math.max(...(await queue.deliveries()).map((d) => d.deadline), lastDeadline) + 5000,
    );
    // Nothing lost: a new consumer drains every job.
    const seen = new Set<string>();
    const worker = await work(queue, async (job) => void seen.add(job.id), {
      concurrency: 4,
      logger: silentLogger,
    });
    await until(() => seen.size === ids.length, {
      what: 'every job seen',
      timeout: 15_000,
      interval: 50,
    });
    await worker.close();
    expect([...seen].sort()).toEqual([...ids].sort());
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 0 });
  }, 60_000);

  it('server SIGKILL: calls in flight fail typed and retryable, the worker reconnects and drains all', async () => {
    const path = storage();
    const first = await serve({ storage: path });
    const url = first.url as string;
    const broker = await client(url);
    const queue = await broker.queue('kill-server', { visibility: 1500 });
    const ids = Array.from({ length: 60 }, (_, index) => `job-${index}`);
    await queue.publishBatch(ids.map((id) => ({ id })));
    const seen = new Set<string>();
    const errors: string[] = [];
    const worker = await work(
      queue,
      async (job) => {
        seen.add(job.id);
        await new Promise((resolve) => setTimeout(resolve, 20));
      },
      { concurrency: 4, logger: silentLogger },
    );
    worker.on('error', (error: unknown) => errors.push((error as { code?: string }).code ?? ''));
    await until(() => seen.size >= 10, { what: 'ten jobs seen', timeout: 15_000, interval: 50 });
    // A call in flight when the server dies fails with a typed error, never a silent answer.
    const inFlight = queue.stats().then(
      () => 'answered',
      (error: { code?: string; retryable?: boolean }) => error.code,
    );
    await first.kill();
    expect(['answered', 'CONNECTION_LOST', 'STORAGE_UNAVAILABLE']).toContain(await inFlight);
    await expect(queue.stats()).rejects.toMatchObject({
      code: expect.stringMatching(/^(CONNECTION_LOST|STORAGE_UNAVAILABLE)$/),
    });
    await serve({ storage: path, port: first.port });
    await until(() => seen.size === ids.length, {
      what: 'every job seen',
      timeout: 30_000,
      interval: 50,
    });
    await until(async () => (await queue.stats()).ready + (await queue.stats()).active === 0, {
      what: 'the queue to be empty',
      timeout: 15_000,
      interval: 50,
    });
    await worker.close();
    expect([...seen].sort()).toEqual([...ids].sort());
    const answer = await call(url, 'GET', '/v1/queues/kill-server/stats');
    expect(answer.body).toMatchObject({ ready: 0, active: 0, delayed: 0, dead: 0 });
  }, 90_000);
});
