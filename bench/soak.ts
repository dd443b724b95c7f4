/**
 * npm run soak -- --minutes 10 [--rate 200] [--window-seconds 15] [--out bench/results/soak.md]
 *
 * A bounded soak: `leaseq serve` (a child, on a temp SQLite file, durability fsync) under a
 * steady load through the HTTP client, for a fixed time. Every window it samples the server's
 * memory (RSS and V8 heap, from a probe loaded into the child), the database file's size (with
 * its WAL), the backlog, and the latency percentiles of publish, ack and publish→ack; then it
 * writes a markdown report.
 */
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RemoteBroker } from '../src/client/remote-broker.js';
import type { RemoteQueue } from '../src/client/remote-queue.js';
import { ServerProcess, sleep } from '../test/faults/server-process.js';
import { benchArgs } from './lib/args.js';
import { percentile } from './lib/stats.js';

const PROBE = fileURLToPath(new URL('./soak-probe.mjs', import.meta.url));

interface Window {
  endSeconds: number;
  published: number;
  acked: number;
  publishMs: number[];
  ackMs: number[];
  endToEndMs: number[];
  errors: number;
}

interface Sample {
  endSeconds: number;
  rssMb: number;
  heapUsedMb: number;
  /** After a full collection: what the heap holds, not when the collector last ran. */
  heapLiveMb: number;
  fileMb: number;
  backlog: number;
  window: Window;
}

const USAGE = `
usage: npm run soak [-- options]

A bounded soak: \`leaseq serve\` (SQLite, fsync) under a steady load through the HTTP client for
a fixed time; every window, the server's memory, the file's size, the backlog and latencies.

  --minutes N          how long, at most 120 (may be fractional; default 10)
  --rate N             jobs published per second (default 200)
  --window-seconds N   the sampling window, at least 1 (default 15)
  --out PATH           the report (default bench/results/soak.md)
`;
const { values } = benchArgs(USAGE, {
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '200' },
    'window-seconds': { type: 'string', default: '15' },
    out: { type: 'string', default: 'bench/results/soak.md' },
  },
});
const minutes = Number(values.minutes);
const rate = Number(values.rate);
const windowSeconds = Number(values['window-seconds']);
if (!(minutes > 0 && minutes <= 120 && rate > 0 && windowSeconds >= 1)) {
  console.error(
    `--minutes must be above 0 and at most 120, --rate above 0, --window-seconds at least 1\n${USAGE}`,
  );
  process.exit(2);
}

let current = newWindow(0);
function newWindow(endSeconds: number): Window {
  return {
    endSeconds,
    published: 0,
    acked: 0,
    publishMs: [],
    ackMs: [],
    endToEndMs: [],
    errors: 0,
  };
}

const PRODUCERS = 4;
const CONSUMERS = 4;

async function produce(queue: RemoteQueue, index: number, until: number): Promise<void> {
  const intervalMs = (1000 * PRODUCERS) / rate;
  let next = performance.now();
  for (let n = 0; Date.now() < until; n++) {
    const started = performance.now();
    try {
      await queue.publish({
        id: `p${index}-${n}`,
        payload: { at: Date.now(), body: 'x'.repeat(200) },
      });
      current.publishMs.push(performance.now() - started);
      current.published += 1;
    } catch {
      current.errors += 1;
    }
    next += intervalMs;
    await sleep(Math.max(0, next - performance.now()));
  }
}

async function consume(queue: RemoteQueue, until: number): Promise<void> {
  while (Date.now() < until) {
    try {
      const deliveries = await queue.receiveWithReceipts({ max: 10, wait: 500 });
      if (deliveries.length === 0) continue;
      const started = performance.now();
      const acked = await queue.ackReceipts(deliveries.map((delivery) => delivery.receipt));
      const ackMs = performance.now() - started;
      deliveries.forEach((delivery, at) => {
        if (acked[at] !== true) return;
        current.acked += 1;
        current.ackMs.push(ackMs);
        current.endToEndMs.push(Date.now() - (delivery.payload as { at: number }).at);
      });
    } catch {
      current.errors += 1;
      await sleep(100);
    }
  }
}

function lastProbe(
  server: ServerProcess,
): { rss: number; heapUsed: number; heapLive: number } | undefined {
  const lines = server.stderr.split('\n').filter((line) => line.startsWith('soak-probe '));
  const last = lines.at(-1);
  return last === undefined ? undefined : JSON.parse(last.slice('soak-probe '.length));
}

function fileBytes(path: string): number {
  let total = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      total += statSync(`${path}${suffix}`).size;
    } catch {
      // no WAL yet
    }
  }
  return total;
}

const mb = (bytes: number) => bytes / 1024 / 1024;
const fmt = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
const pcts = (values: number[]) =>
  `${fmt(percentile(values, 50))} / ${fmt(percentile(values, 95))} / ${fmt(percentile(values, 99))} / ${fmt(values.length ? Math.max(...values) : Number.NaN)}`;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-soak-'));
  const path = join(dir, 'soak.db');
  process.env.LEASEQ_SOAK_PROBE_MS = String(Math.min(5000, windowSeconds * 500));
  const server = new ServerProcess({ storage: `sqlite:${path}`, imports: [PROBE] }, 'soak server');
  const samples: Sample[] = [];
  try {
    const url = await server.listening();
    const broker = new RemoteBroker(url);
    await broker.createQueue('soak', { visibility: 30_000 });
    const started = Date.now();
    const until = started + minutes * 60_000;
    const loops = [
      ...Array.from({ length: PRODUCERS }, (_, i) => produce(broker.handle('soak'), i, until)),
      ...Array.from({ length: CONSUMERS }, () => consume(broker.handle('soak'), until + 2000)),
    ];
    for (let end = windowSeconds; started + end * 1000 <= until; end += windowSeconds) {
      await sleep(started + end * 1000 - Date.now());
      const window = current;
      current = newWindow(end + windowSeconds);
      window.endSeconds = end;
      const probe = lastProbe(server);
      const stats = await broker.handle('soak').stats();
      samples.push({
        endSeconds: end,
        rssMb: mb(probe?.rss ?? Number.NaN),
        heapUsedMb: mb(probe?.heapUsed ?? Number.NaN),
        heapLiveMb: mb(probe?.heapLive ?? Number.NaN),
        fileMb: mb(fileBytes(path)),
        backlog: stats.ready + stats.active,
        window,
      });
      const last = samples.at(-1) as Sample;
      console.info(
        `${end}s: ${window.published} published, ${window.acked} acked, rss ${fmt(last.rssMb)} MB, heap ${fmt(last.heapUsedMb)} MB (${fmt(last.heapLiveMb)} MB live), file ${fmt(last.fileMb)} MB, backlog ${last.backlog}, publish p99 ${fmt(percentile(window.publishMs, 99))} ms`,
      );
    }
    await Promise.all(loops);
    await broker.close();
    writeFileSync(values.out as string, report(samples, Date.now() - started));
    console.info(`report written to ${values.out}`);
  } finally {
    await server.terminate();
    await rm(dir, { recursive: true, force: true });
  }
}

function report(samples: Sample[], elapsedMs: number): string {
  const first = samples[0];
  const last = samples.at(-1);
  const all = (pick: (w: Window) => number[]) => samples.flatMap((s) => pick(s.window));
  const published = samples.reduce((sum, s) => sum + s.window.published, 0);
  const acked = samples.reduce((sum, s) => sum + s.window.acked, 0);
  const errors = samples.reduce((sum, s) => sum + s.window.errors, 0);
  const rows = samples.map(
    (s) =>
      `| ${s.endSeconds} | ${s.window.published} | ${s.window.acked} | ${s.window.errors} | ${s.backlog} | ${pcts(s.window.publishMs)} | ${pcts(s.window.ackMs)} | ${pcts(s.window.endToEndMs)} | ${fmt(s.rssMb)} | ${fmt(s.heapUsedMb)} | ${fmt(s.heapLiveMb)} | ${fmt(s.fileMb, 2)} |`,
  );
  return [
    '# Soak: `leaseq serve` on SQLite under steady load',
    '',
    `Written by \`npm run soak -- --minutes ${minutes} --rate ${rate} --window-seconds ${windowSeconds}\` on ${new Date().toISOString().slice(0, 10)}.`,
    `Length: **${fmt(elapsedMs / 60_000, 1)} minutes** (${samples.length} windows of ${windowSeconds} s).`,
    `Load: ${PRODUCERS} producers publishing single jobs (200-byte payloads), paced to ${rate} jobs/s in all; each waits for its answer, so when a publish takes longer than ${fmt((1000 * PRODUCERS) / rate, 0)} ms the rate reached is lower (it was ${fmt(published / (elapsedMs / 1000), 0)} jobs/s on average). ${CONSUMERS} consumers receive up to 10 (long poll 500 ms) and ack each batch with one request. One server, SQLite file in a temp dir, durability fsync, default settings (info logs on).`,
    'The machine has 2 cores shared with other work while this ran: absolute latencies are noisy; the trends over time are the point.',
    '',
    `Totals: ${published} published, ${acked} acked, ${errors} errors. RSS ${fmt(first?.rssMb ?? Number.NaN)} → ${fmt(last?.rssMb ?? Number.NaN)} MB, heap ${fmt(first?.heapUsedMb ?? Number.NaN)} → ${fmt(last?.heapUsedMb ?? Number.NaN)} MB, live heap (after a full collection) ${fmt(first?.heapLiveMb ?? Number.NaN)} → ${fmt(last?.heapLiveMb ?? Number.NaN)} MB, database with WAL ${fmt(first?.fileMb ?? Number.NaN, 2)} → ${fmt(last?.fileMb ?? Number.NaN, 2)} MB.`,
    `Whole run, p50 / p95 / p99 / max (ms): publish ${pcts(all((w) => w.publishMs))}; ack batch ${pcts(all((w) => w.ackMs))}; publish→ack ${pcts(all((w) => w.endToEndMs))}.`,
    '',
    '| t (s) | published | acked | errors | backlog | publish ms p50/p95/p99/max | ack ms p50/p95/p99/max | publish→ack ms p50/p95/p99/max | RSS MB | heap MB | live heap MB | file MB |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
