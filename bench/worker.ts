// The worker path against the raw API on the same engine, in the same run: N jobs drained by
// `work(queue, emptyHandler, { concurrency })` beside N drained by `concurrency` loops of
// `receive({ max: 1 })` then `ack(token)`, and by the same loops with a long receive (`wait`), the
// receive a consumer that waits for work makes. The worker should cost little on top of them.
// Run: npm run bench:worker [-- --n 10000 --runs 3 --concurrency 1,32 --only memory,sqlite-fsync]
// It measures the built package (dist/), as users run it; npm run bench:worker builds it first.
// Profile: node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/worker.ts --only memory --modes worker
import { rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs, wholeNumber, wholeNumbers } from './lib/args.js';
import { type Broker, leaseq, type Queue } from './lib/leaseq.js';
import { median } from './lib/stats.js';
import { formatInteger, markdownTable } from './table.js';

const USAGE = `
usage: npm run bench:worker [-- options]

The worker against the raw API on the same engine: N jobs drained by work() with an empty
handler, by loops of receive({ max: 1 }) and ack, and by the same loops with a long receive.

  --n N              jobs (default 10000)
  --runs N           runs, the median is shown (default 3)
  --concurrency A,B  worker concurrency and loops (default 1,32)
  --only A,B         only these engines (default all)
  --modes A,B        any of raw, raw-wait, worker (default all)
`;
const { values } = benchArgs(USAGE, {
  options: {
    n: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '1,32' },
    only: { type: 'string' },
    /** Any of raw, raw-wait, worker (default all), e.g. to profile the worker alone. */
    modes: { type: 'string', default: 'raw,raw-wait,worker' },
  },
});
const jobCount = wholeNumber('n', values.n, 1);
const runCount = wholeNumber('runs', values.runs, 1);
const concurrencies = wholeNumbers('concurrency', values.concurrency, 1);
const modes = new Set(values.modes.split(','));
const postgresUrl =
  process.env.LEASEQ_BENCH_POSTGRES_URL ??
  process.env.LEASEQ_TEST_POSTGRES_URL ??
  'postgres://postgres@127.0.0.1:5432/test';

interface Setup {
  name: string;
  open(): Promise<Broker>;
  cleanup?(): void;
}

const sqliteFile = join(tmpdir(), `leaseq-bench-worker-${process.pid}.db`);
const removeSqlite = () => {
  for (const suffix of ['', '-wal', '-shm', '-journal'])
    rmSync(sqliteFile + suffix, { force: true });
};
const setups: Setup[] = [
  { name: 'memory', open: () => leaseq.open('memory:') },
  {
    name: 'sqlite-fsync',
    open: () => leaseq.open(`sqlite:${sqliteFile}`, { durability: 'fsync' }),
    cleanup: removeSqlite,
  },
  {
    name: 'sqlite-os',
    open: () => leaseq.open(`sqlite:${sqliteFile}`, { durability: 'os' }),
    cleanup: removeSqlite,
  },
  { name: 'postgres', open: () => leaseq.open(postgresUrl) },
];

async function fill(queue: Queue): Promise<void> {
  for (let start = 0; start < jobCount; start += 1000) {
    const batch = [];
    for (let n = start; n < Math.min(jobCount, start + 1000); n++) {
      batch.push({ payload: { n, body: 'x'.repeat(80) } });
    }
    await queue.publishBatch(batch);
  }
}

/**
 * The raw API: `concurrency` loops of receive one, ack it. Returns jobs/s. With `wait`, each
 * receive is a long one, as a consumer that waits for work makes it (the worker's receive).
 */
async function rawDrain(queue: Queue, concurrency: number, wait = 0): Promise<number> {
  let acked = 0;
  let taken = 0;
  const started = performance.now();
  const consumer = async () => {
    while (taken < jobCount) {
      taken += 1;
      const [delivery] = await queue.receive({ max: 1, wait });
      if (delivery === undefined) return;
      if (await queue.ack(delivery.token)) acked += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, consumer));
  const ms = performance.now() - started;
  if (acked !== jobCount) throw new Error(`raw drain acked ${acked} of ${jobCount}`);
  return (acked / ms) * 1000;
}

/** The worker with an empty handler, timed until its N-th ack. Returns jobs/s. */
async function workerDrain(queue: Queue, concurrency: number): Promise<number> {
  let acked = 0;
  let allAcked!: () => void;
  const done = new Promise<void>((resolve) => {
    allAcked = resolve;
  });
  const started = performance.now();
  const worker = await leaseq.work(queue, async () => {}, {
    concurrency,
    logger: leaseq.silentLogger,
  });
  worker.on('outcome', (record) => {
    if (record.outcome === 'acked') acked += 1;
    if (acked === jobCount) allAcked();
  });
  await done;
  const ms = performance.now() - started;
  await worker.close({ timeout: 1000 });
  return (acked / ms) * 1000;
}

const rows: string[][] = [];
for (const setup of setups) {
  if (values.only !== undefined && !values.only.split(',').includes(setup.name)) continue;
  setup.cleanup?.();
  let broker: Broker;
  try {
    broker = await setup.open();
  } catch (error) {
    rows.push([setup.name, '–', 'unavailable', (error as Error).message, '', '', '']);
    continue;
  }
  for (const concurrency of concurrencies) {
    const raw: number[] = [];
    const rawWait: number[] = [];
    const worker: number[] = [];
    for (let run = 1; run <= runCount; run++) {
      // Each run on a fresh queue; raw and worker take turns so a busy moment hits both.
      const name = `bench-worker-${process.pid}-${concurrency}-${run}`;
      const queue = await broker.queue(name, { visibility: 60_000 });
      if (modes.has('raw')) {
        await fill(queue);
        raw.push(await rawDrain(queue, concurrency));
      }
      if (modes.has('raw-wait')) {
        await fill(queue);
        rawWait.push(await rawDrain(queue, concurrency, 20_000));
      }
      if (modes.has('worker')) {
        await fill(queue);
        worker.push(await workerDrain(queue, concurrency));
      }
      await broker.deleteQueue(name);
    }
    const rawRate = median(raw);
    const rawWaitRate = median(rawWait);
    const workerRate = median(worker);
    const rate = (value: number) => (Number.isNaN(value) ? '–' : formatInteger(value));
    const ratio = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : '–');
    rows.push([
      setup.name,
      String(concurrency),
      rate(rawRate),
      rate(rawWaitRate),
      rate(workerRate),
      ratio(workerRate / rawRate),
      ratio(workerRate / rawWaitRate),
    ]);
    console.error(rows.at(-1)?.join('  '));
  }
  await broker.close();
  setup.cleanup?.();
}
console.log(
  `N = ${formatInteger(jobCount)} jobs, median of ${runCount} runs; empty handler; raw = ` +
    `concurrency loops of receive({ max: 1 }) + ack; raw, long receive = the same with ` +
    `receive({ max: 1, wait: 20000 }); node ${process.version}, ` +
    `${availableParallelism()} CPUs, load average ${(loadavg()[0] ?? 0).toFixed(2)}\n`,
);
console.log(
  markdownTable(
    [
      'engine',
      'concurrency',
      'raw jobs/s',
      'raw, long receive jobs/s',
      'worker jobs/s',
      'worker / raw',
      'worker / raw, long receive',
    ],
    rows,
  ),
);
