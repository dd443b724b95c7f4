/**
 * Cost growth: one leaseq queue holding a backlog of `--backlog` jobs, in its own process
 * (started by compare.ts with --expose-gc). Fills the queue, then measures at that backlog:
 * publishing `--sample` more jobs (batches of 100, 4 in flight) and reserving and acking as
 * many (one by one, 32 consumers), the time of a stats call (which /metrics and the dashboard
 * make for every queue they show), the heap and RSS held per queued job and, on SQLite, the
 * growth of the database and WAL files per job. A warm-up of 10^4 jobs on another queue comes
 * first. Prints one line, `RESULT {json}`.
 *
 *   node --expose-gc --import tsx growth.ts --mode sqlite-fsync --backlog 100000 --sqlite-file /tmp/x.db
 *   node --expose-gc --import tsx growth.ts --mode postgres --backlog 100000 --postgres postgres://…
 */
import { rmSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { leaseq, type Queue } from './lib/leaseq.js';
import { median } from './lib/stats.js';
import { payload } from './subjects/subject.js';

export interface GrowthResult {
  mode: string;
  backlog: number;
  sample: number;
  /** Jobs per second while filling the queue from empty to the backlog. */
  fillPerSecond: number;
  /** Jobs per second publishing `sample` more onto the backlog (see atBacklog). */
  publishPerSecond: number;
  /** Jobs per second reserving and acking `sample` jobs off the backlog (see atBacklog). */
  reserveAckPerSecond: number;
  /** Milliseconds of one stats call at the backlog (median of STATS_CALLS). */
  statsMs?: number;
  heapBytesPerJob: number;
  rssBytesPerJob: number;
  /** SQLite: what the database and its WAL grew by, per queued job. */
  fileBytesPerJob: number | undefined;
}

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'memory' },
    backlog: { type: 'string', default: '1000' },
    sample: { type: 'string', default: '10000' },
    'fill-batch': { type: 'string', default: '5000' },
    'sqlite-file': { type: 'string' },
    postgres: { type: 'string' },
  },
});
const mode = values.mode ?? 'memory';
const backlog = Number(values.backlog);
const sample = Number(values.sample);
const file = values['sqlite-file'];
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const postgresUrl = values.postgres;
if (mode.startsWith('sqlite') && file === undefined) {
  throw new Error(`--mode ${mode} needs --sqlite-file`);
}
if (mode === 'postgres' && postgresUrl === undefined)
  throw new Error('--mode postgres needs --postgres');
const url =
  mode === 'memory' ? 'memory:' : mode === 'postgres' ? (postgresUrl as string) : `sqlite:${file}`;
const broker = await leaseq.open(url, mode === 'sqlite-os' ? { durability: 'os' } : {});
const name = `growth-${process.pid}`;
const queue = await broker.queue(name);

const memory = () => {
  gc();
  gc();
  return process.memoryUsage();
};

/** Publishes jobs first…first+count-1 in batches of `size`, 4 batches in flight. */
async function publish(target: Queue, first: number, count: number, size: number) {
  let next = first;
  const end = first + count;
  const producer = async () => {
    while (next < end) {
      const start = next;
      next = Math.min(end, next + size);
      const batch = [];
      for (let n = start; n < next; n++) batch.push({ payload: payload(n) });
      await target.publishBatch(batch);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: 4 }, producer));
  return performance.now() - started;
}

async function reserveAck(target: Queue, count: number) {
  let taken = 0;
  const consumer = async () => {
    while (taken < count) {
      taken += 1;
      const [delivery] = await target.receive({ max: 1 });
      if (delivery === undefined || !(await target.ack(delivery.token))) {
        throw new Error('a job of the backlog was not delivered and acked');
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: 32 }, consumer));
  return performance.now() - started;
}

/**
 * `sample` jobs published (batches of 100, 4 in flight) and as many reserved and acked, in
 * rounds of at most half the backlog, so that the queue holds between `backlog` and 1.5 times
 * as many jobs throughout. Only the publishes and the reserve+acks are timed.
 */
async function atBacklog(target: Queue) {
  const round = Math.max(1, Math.min(sample, Math.floor(backlog / 2)));
  let publishMs = 0;
  let reserveAckMs = 0;
  for (let done = 0; done < sample; ) {
    const count = Math.min(round, sample - done);
    publishMs += await publish(target, backlog + done, count, 100);
    reserveAckMs += await reserveAck(target, count);
    done += count;
  }
  return {
    publishPerSecond: (sample / publishMs) * 1000,
    reserveAckPerSecond: (sample / reserveAckMs) * 1000,
  };
}

/** Calls of stats timed at the backlog; the median is reported. */
const STATS_CALLS = 9;

async function statsMs(target: Queue): Promise<number> {
  const times: number[] = [];
  for (let call = 0; call < STATS_CALLS; call++) {
    const started = performance.now();
    await target.stats();
    times.push(performance.now() - started);
  }
  return median(times);
}

const fileBytes = () =>
  file === undefined
    ? 0
    : ['', '-wal'].reduce((sum, suffix) => {
        try {
          return sum + statSync(file + suffix).size;
        } catch {
          return sum;
        }
      }, 0);

// Warm-up on another queue (in another file on SQLite), so that the small backlogs do not
// measure the JIT, nor leave free pages in the measured file.
const warmUpBroker = mode.startsWith('sqlite')
  ? await leaseq.open(`sqlite:${file}-warm-up`)
  : broker;
const warmUp = await warmUpBroker.queue(`${name}-warm-up`);
await publish(warmUp, 0, 10_000, 1000);
await reserveAck(warmUp, 10_000);
await warmUpBroker.deleteQueue(`${name}-warm-up`);
if (warmUpBroker !== broker) {
  await warmUpBroker.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}-warm-up${suffix}`, { force: true });
}

const fileBefore = fileBytes();
const before = memory();
const fillPerSecond =
  (backlog / (await publish(queue, 0, backlog, Number(values['fill-batch'])))) * 1000;
const after = memory();
const fileBytesPerJob = file === undefined ? undefined : (fileBytes() - fileBefore) / backlog;
const { publishPerSecond, reserveAckPerSecond } = await atBacklog(queue);
const stats = await statsMs(queue);
await broker.deleteQueue(name);
await broker.close();

const result: GrowthResult = {
  mode,
  backlog,
  sample,
  fillPerSecond,
  publishPerSecond,
  reserveAckPerSecond,
  statsMs: stats,
  heapBytesPerJob: (after.heapUsed - before.heapUsed) / backlog,
  rssBytesPerJob: (after.rss - before.rss) / backlog,
  fileBytesPerJob,
};
console.log(`RESULT ${JSON.stringify(result)}`);
