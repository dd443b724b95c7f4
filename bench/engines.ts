// Engines side by side: publish N jobs in batches of 100 from 4 concurrent producers, then
// drain them with 32 concurrent consumers (reserve one, ack it, one at a time).
// Run: npm run bench:engines [-- --n 20000 --producers 4 --consumers 32 --only sqlite-fsync]
import { rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EngineOptions, openEngine, type QueueHandle } from '../src/index.js';
import { benchArgs, wholeNumber } from './lib/args.js';
import { formatInteger, markdownTable } from './table.js';

const USAGE = `
usage: npm run bench:engines [-- options]

Engines side by side: N jobs published in batches of 100 by concurrent producers, then drained
by concurrent consumers (reserve one, ack it).

  --n N            jobs (default 20000)
  --producers N    concurrent producers (default 4)
  --consumers N    concurrent consumers (default 32)
  --only A,B       only these engines (default all)
`;
const { values } = benchArgs(USAGE, {
  options: {
    n: { type: 'string', default: '20000' },
    consumers: { type: 'string', default: '32' },
    producers: { type: 'string', default: '4' },
    only: { type: 'string' },
  },
});
const jobCount = wholeNumber('n', values.n, 1);
const consumerCount = wholeNumber('consumers', values.consumers, 1);
const producerCount = wholeNumber('producers', values.producers, 1);
const postgresUrl =
  process.env.LEASEQ_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

interface Setup {
  name: string;
  url: string;
  options?: EngineOptions;
  cleanup?: () => void;
}

const sqliteFile = join(tmpdir(), `leaseq-bench-${process.pid}.db`);
const removeSqlite = () => {
  for (const suffix of ['', '-wal', '-shm']) rmSync(sqliteFile + suffix, { force: true });
};
const setups: Setup[] = [
  { name: 'memory', url: 'memory:' },
  {
    name: 'sqlite-fsync',
    url: `sqlite:${sqliteFile}`,
    options: { durability: 'fsync' },
    cleanup: removeSqlite,
  },
  {
    name: 'sqlite-os',
    url: `sqlite:${sqliteFile}`,
    options: { durability: 'os' },
    cleanup: removeSqlite,
  },
  { name: 'postgres', url: postgresUrl },
];

/** A clock for the engines: wall milliseconds, never going back. */
let last = 0;
const now = () => {
  last = Math.max(last, Date.now());
  return last;
};

/** Each producer sends its share of the batches of 100, one batch at a time. */
async function publishAll(queue: QueueHandle): Promise<void> {
  let nextStart = 0;
  const producer = async () => {
    for (let start = nextStart; start < jobCount; start = nextStart) {
      nextStart += 100;
      const batch = [];
      for (let i = start; i < Math.min(jobCount, start + 100); i++) {
        batch.push({ id: `job-${i}`, payload: { n: i, body: 'x'.repeat(80) } });
      }
      await queue.publishBatch(now(), batch);
    }
  };
  await Promise.all(Array.from({ length: producerCount }, producer));
}

async function drainAll(queue: QueueHandle): Promise<number> {
  let acked = 0;
  const consumer = async () => {
    for (;;) {
      const [delivery] = await queue.reserve(now(), { visibility: 60_000 });
      if (delivery === undefined) return;
      if (await queue.ack(now(), delivery.token)) acked += 1;
    }
  };
  await Promise.all(Array.from({ length: consumerCount }, consumer));
  return acked;
}

const rows: string[][] = [];
for (const setup of setups) {
  if (values.only !== undefined && values.only !== setup.name) continue;
  setup.cleanup?.();
  let engine: Awaited<ReturnType<typeof openEngine>>;
  try {
    engine = await openEngine(setup.url, setup.options);
  } catch (error) {
    rows.push([setup.name, 'unavailable', (error as Error).message, '', '', '']);
    continue;
  }
  const name = `bench-${process.pid}-${setup.name}`;
  await engine.deleteQueue(name);
  const queue = await engine.queue(name);
  const publishStart = performance.now();
  await publishAll(queue);
  const publishMs = performance.now() - publishStart;
  const drainStart = performance.now();
  const acked = await drainAll(queue);
  const drainMs = performance.now() - drainStart;
  if (acked !== jobCount) throw new Error(`${setup.name}: acked ${acked} of ${jobCount}`);
  await engine.deleteQueue(name);
  await engine.close();
  setup.cleanup?.();
  rows.push([
    setup.name,
    formatInteger((jobCount / publishMs) * 1000),
    formatInteger((jobCount / drainMs) * 1000),
    formatInteger((jobCount / (publishMs + drainMs)) * 1000),
    String(producerCount),
    String(consumerCount),
  ]);
}
console.log(
  `N = ${jobCount}: publish in batches of 100, then reserve+ack one job at a time; ` +
    `node ${process.version}, ${availableParallelism()} CPUs\n`,
);
console.log(
  markdownTable(
    [
      'engine',
      'publish jobs/s',
      'reserve+ack jobs/s',
      'end-to-end jobs/s',
      'producers',
      'consumers',
    ],
    rows,
  ),
);
