/**
 * One run of the comparison's workloads against one system, in its own process (started by
 * compare.ts, which bounds it in time): W1 enqueue, W2 drain at concurrency 1 and 32, W3
 * publish-to-handler latency, W4 drain through the system's consumer library at concurrency 1
 * and 32. Prints one line, `RESULT {json}`.
 *
 *   node --import tsx workload.ts --subject leaseq-memory --prefix bench-1
 */
import { parseArgs } from 'node:util';
import { percentile, sleep } from './lib/stats.js';
import { type Endpoints, isSubjectName, openSubject } from './subjects/index.js';
import { type Payload, payload, type Subject } from './subjects/subject.js';

export interface Rate {
  /** Jobs done within the phase's time budget… */
  jobs: number;
  /** …of this many. */
  of: number;
  ms: number;
  perSecond: number;
}

export interface Latency {
  sent: number;
  handled: number;
  p50: number;
  p99: number;
  max: number;
}

export interface WorkloadResult {
  subject: string;
  server: string | undefined;
  w1: Rate;
  w2c1: Rate;
  w2c32: Rate;
  w3: Latency;
  /** Absent in results written before W4 existed. */
  w4c1?: Rate;
  w4c32?: Rate;
}

const { values } = parseArgs({
  options: {
    subject: { type: 'string' },
    prefix: { type: 'string' },
    n: { type: 'string', default: '20000' },
    'latency-jobs': { type: 'string', default: '2000' },
    'warm-up': { type: 'string', default: '2000' },
    inflight: { type: 'string', default: '4' },
    'phase-ms': { type: 'string', default: '30000' },
    'drain-ms': { type: 'string', default: '20000' },
    postgres: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    amqp: { type: 'string', default: 'amqp://guest:guest@127.0.0.1:5672' },
    'sqlite-file': { type: 'string' },
    'http-url': { type: 'string' },
    /** Which of w1, w2c1, w2c32, w3, w4c1 and w4c32 to run (all by default). */
    phases: { type: 'string', default: 'w1,w2c1,w2c32,w3,w4c1,w4c32' },
    cleanup: { type: 'boolean', default: false },
  },
});

const subjectName = values.subject ?? '';
if (!isSubjectName(subjectName))
  throw new Error(`unknown --subject ${JSON.stringify(subjectName)}`);
const prefix = values.prefix ?? `bench-${process.pid}`;
const jobCount = Number(values.n);
const phaseMs = Number(values['phase-ms']);
const drainMs = Number(values['drain-ms']);
const endpoints: Endpoints = {
  postgres: values.postgres,
  redis: values.redis,
  amqp: values.amqp,
  ...(values['sqlite-file'] === undefined ? {} : { sqliteFile: values['sqlite-file'] }),
  ...(values['http-url'] === undefined ? {} : { httpUrl: values['http-url'] }),
};
const phases = new Set(values.phases.split(','));
const backlog = `${prefix}-backlog`;
const idle = `${prefix}-latency`;

const subject = await openSubject(subjectName, endpoints);
if (values.cleanup) {
  await subject.remove(backlog);
  await subject.remove(idle);
  await subject.close();
} else {
  const result = await run(subject);
  await subject.close();
  console.log(`RESULT ${JSON.stringify(result)}`);
}

async function run(subject: Subject): Promise<WorkloadResult> {
  const server = await subject.server();
  const skipped: Rate = { jobs: 0, of: 0, ms: 0, perSecond: Number.NaN };
  let w1 = skipped;
  let w2c1 = skipped;
  let w2c32 = skipped;
  if (phases.has('w1') || phases.has('w2c1')) {
    await subject.create(backlog);
    w1 = await publishAll(subject, backlog, jobCount, performance.now() + phaseMs);
    if (phases.has('w2c1')) w2c1 = await drainAll(subject, backlog, w1.jobs, 1);
  }
  if (phases.has('w2c32')) {
    // From an empty queue: a drain cut short leaves jobs behind.
    await subject.create(backlog);
    const refill = await publishAll(subject, backlog, jobCount, performance.now() + phaseMs);
    w2c32 = await drainAll(subject, backlog, refill.jobs, 32);
  }
  const w4c1 = phases.has('w4c1') ? await workAll(subject, 1) : skipped;
  const w4c32 = phases.has('w4c32') ? await workAll(subject, 32) : skipped;
  await subject.remove(backlog);
  const w3 = phases.has('w3')
    ? await latency(subject)
    : { sent: 0, handled: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN };
  await subject.remove(idle);
  return { subject: subjectName, server, w1, w2c1, w2c32, w3, w4c1, w4c32 };
}

/** W4: a fresh backlog drained through the system's consumer library. */
async function workAll(subject: Subject, concurrency: number): Promise<Rate> {
  await subject.create(backlog);
  const filled = await publishAll(subject, backlog, jobCount, performance.now() + phaseMs);
  const started = performance.now();
  const acked = await subject.work(backlog, filled.jobs, concurrency, started + drainMs);
  return rate(acked, filled.jobs, performance.now() - started);
}

/** W1: `count` jobs in batches of the system's size, `inflight` batches at a time. */
async function publishAll(subject: Subject, name: string, count: number, deadline: number) {
  const size = subject.batchSize;
  let next = 0;
  let published = 0;
  const producer = async () => {
    while (next < count && performance.now() < deadline) {
      const start = next;
      next = Math.min(count, next + size);
      const batch: Payload[] = [];
      for (let n = start; n < next; n++) batch.push(payload(n));
      await subject.publishBatch(name, batch);
      published += batch.length;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Number(values.inflight) }, producer));
  return rate(published, count, performance.now() - started);
}

/** W2: the queued jobs, received and acked one by one. */
async function drainAll(subject: Subject, name: string, count: number, concurrency: number) {
  const started = performance.now();
  const acked = await subject.drain(name, count, concurrency, started + drainMs);
  return rate(acked, count, performance.now() - started);
}

function rate(jobs: number, of: number, ms: number): Rate {
  return { jobs, of, ms, perSecond: (jobs / ms) * 1000 };
}

/**
 * W3: an idle consumer; jobs sent one at a time, each once the previous one was acked and 1 ms
 * more has passed, so that every job finds the consumer waiting. The latency is from the
 * publish call to the first line of the handler, both timed in this process. The first
 * `warm-up` jobs are not counted.
 */
async function latency(subject: Subject): Promise<Latency> {
  const warmUp = Number(values['warm-up']);
  const count = Number(values['latency-jobs']);
  const sentAt: number[] = [];
  const samples: number[] = [];
  let handled = 0;
  let waiting: { n: number; resolve: () => void } | undefined;
  await subject.create(idle, { latency: true });
  const stop = await subject.consume(
    idle,
    (job) => {
      const at = performance.now();
      const sent = sentAt[job.n];
      if (sent === undefined || job.n < warmUp) return;
      samples.push(at - sent);
      handled += 1;
    },
    (job) => {
      if (waiting?.n === job.n) waiting.resolve();
    },
  );
  await sleep(200);
  const deadline = performance.now() + phaseMs;
  let sent = 0;
  for (let n = 0; n < warmUp + count && performance.now() < deadline; n++) {
    const settled = new Promise<void>((resolve) => {
      waiting = { n, resolve };
    });
    let timer: NodeJS.Timeout | undefined;
    sentAt[n] = performance.now();
    await subject.publish(idle, payload(n));
    if (n >= warmUp) sent += 1;
    await Promise.race([settled, new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
    await sleep(1);
  }
  await stop();
  return {
    sent,
    handled,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: percentile(samples, 100),
  };
}
