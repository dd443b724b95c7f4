import { join } from 'node:path';
import { afterAll, afterEach, describe, expect } from 'vitest';
import type { Broker } from '../../src/broker/index.js';
import { RemoteBroker } from '../../src/client/index.js';
import { open, type QueueOptions } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { Gate, Harness, type HarnessOptions, type ManualClock } from '../../src/testing/index.js';
import type { JobContext, WorkerOptions } from '../../src/worker/index.js';
import { injectFetch } from '../conformance/remote-engine.js';
import { temporaryDirectory } from '../temporary-directory.js';

/** One storage the worker suites run over. */
export interface WorkerEngine {
  readonly name: 'memory' | 'sqlite' | 'http' | 'stream';
  /** A URL of fresh storage. */
  url(): string;
  /** How the harness reaches it, when not by `url` (see HarnessOptions.connect). */
  readonly connect?: HarnessOptions['connect'];
  /** Why this engine's tests are skipped; undefined when they run. */
  readonly skipReason: string | undefined;
}

/** The queue most tests use: a 1 s lease, three deliveries. */
export const QUEUE: QueueOptions = { visibility: 1000, maxDeliveries: 3 };

/**
 * Memory and SQLite (a fresh file per harness), and the remote client over plain HTTP and over
 * the stream. Call once at the top of a test file.
 */
export async function workerEngines(): Promise<WorkerEngine[]> {
  const dir = temporaryDirectory('leaseq-worker-');
  afterAll(() => Promise.all(servers.splice(0).map((server) => server.close())));
  let files = 0;
  const sqliteUrl = () => {
    files += 1;
    return `sqlite:${join(dir, `w${files}.db`)}`;
  };
  return [
    { name: 'memory', url: () => 'memory:', skipReason: undefined },
    { name: 'sqlite', url: sqliteUrl, skipReason: undefined },
    { name: 'http', url: () => 'memory:', connect: connectOverHttp, skipReason: undefined },
    { name: 'stream', url: () => 'memory:', connect: connectOverStream, skipReason: undefined },
  ];
}

/**
 * Servers started for harnesses over HTTP and the stream, closed after the file that started them
 * (see workerEngines: this module is loaded once for all the files a Vitest worker runs).
 */
const servers: { close(): Promise<void> }[] = [];

/**
 * The worker over the HTTP client: a server in process (Fastify's inject) over a memory engine
 * on the harness's clock, so long polls park and wake on that clock as in-process receives do.
 */
async function connectOverHttp(clock: ManualClock): Promise<Broker> {
  const broker = await open('memory:', { clock });
  const app = await createApp({ broker, receiptSecret: 'worker-suite-secret-of-32-characters' });
  await app.ready();
  servers.push({ close: () => app.close().finally(() => broker.close()) });
  return new RemoteBroker('http://worker-suite.invalid', { fetch: injectFetch(app) });
}

/**
 * The worker over the stream: a server on a loopback socket over a memory engine on the
 * harness's clock; the client's subscription pushes the worker's jobs.
 */
async function connectOverStream(clock: ManualClock): Promise<Broker> {
  const broker = await open('memory:', { clock });
  const app = await createApp({ broker, receiptSecret: 'worker-suite-secret-of-32-characters' });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const client = new RemoteBroker(baseUrl, { transport: 'stream' });
  servers.push({
    close: () =>
      client
        .close()
        .finally(() => app.close())
        .finally(() => broker.close()),
  });
  return client;
}

/** Opens a harness over `engine` and closes it after the test. */
export function harnessFor(engine: WorkerEngine) {
  const open: Harness[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((harness) => harness.close()));
  });
  return async (options: HarnessOptions = {}): Promise<Harness> => {
    const harness = await Harness.open({
      url: engine.url(),
      queueOptions: QUEUE,
      ...(engine.connect === undefined ? {} : { connect: engine.connect }),
      ...options,
    });
    open.push(harness);
    return harness;
  };
}

/** Declares `body` once per engine; an engine with a skip reason shows it in the title. */
export function describeEngines(
  engines: readonly WorkerEngine[],
  title: string,
  body: (open: ReturnType<typeof harnessFor>, engine: WorkerEngine) => void,
): void {
  for (const engine of engines) {
    const skipped = engine.skipReason !== undefined;
    const name = `${title} over ${engine.name}${skipped ? ` (skipped: ${engine.skipReason})` : ''}`;
    describe.skipIf(skipped)(name, () => body(harnessFor(engine), engine));
  }
}

/** A process whose handler waits at a gate (honouring its signal) and exposes its context. */
export async function holding(h: Harness, options: WorkerOptions = {}) {
  const gate = new Gate();
  const contexts: JobContext[] = [];
  const consumer = h.process(async (_job, ctx) => {
    contexts.push(ctx);
    await gate.pass(ctx.signal);
  }, options);
  await h.queue.publish({ id: 'a' });
  expect(await consumer.worker.runOnce()).toBe(1);
  await gate.arrivedAt(1);
  const extends_ = () => consumer.faults.calls.filter((call) => call.op === 'extend');
  const settles = () =>
    consumer.faults.calls.filter((call) => ['ack', 'nack', 'reject'].includes(call.op));
  const deadline = async () => (await h.queue.inspect()).active[0]?.deadline;
  return { consumer, gate, ctx: contexts[0] as JobContext, extends_, settles, deadline };
}
