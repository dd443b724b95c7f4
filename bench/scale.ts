// Scale-out on PostgreSQL: one backlog drained by 1, 2 and 4 consumer processes (each with 1
// and 8 receive/ack loops), straight on the database and through 1 and 2 `leaseq serve`
// processes over it. Prints the jobs/s in total and per process.
// Run (root): npm run bench:scale [-- --n 10000 --processes 1,2,4 --concurrency 1,8 --servers 0,1,2
//   --out bench/results/scale.md]
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { open } from '../src/index.js';
import { benchArgs, wholeNumber, wholeNumbers } from './lib/args.js';
import { startServe } from './lib/serve.js';
import { formatInteger, markdownTable } from './table.js';

const here = dirname(fileURLToPath(import.meta.url));
const USAGE = `
usage: npm run bench:scale [-- options]   (at the root)

Scale-out on PostgreSQL: one backlog drained by several consumer processes, each with several
receive/ack loops, straight on the database and through \`leaseq serve\` processes over it.

  --n N              jobs (default 10000)
  --processes A,B    consumer processes (default 1,2,4)
  --concurrency A,B  loops per process (default 1,8)
  --servers A,B      leaseq servers in between, 0: none (default 0,1,2)
  --postgres URL     the database (default $LEASEQ_BENCH_POSTGRES_URL, else
                     postgres://postgres@127.0.0.1:5432/test)
  --out PATH         also write the report there (markdown)
`;
const { values } = benchArgs(USAGE, {
  options: {
    child: { type: 'boolean', default: false },
    url: { type: 'string' },
    queue: { type: 'string' },
    n: { type: 'string', default: '10000' },
    processes: { type: 'string', default: '1,2,4' },
    concurrency: { type: 'string', default: '1,8' },
    servers: { type: 'string', default: '0,1,2' },
    out: { type: 'string' },
    postgres: {
      type: 'string',
      default: process.env.LEASEQ_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    },
  },
});

const SAMPLE_MS = 20;

const percent = (share: number) => `${Math.round(share * 100)}%`;

/** The machine's CPU time so far, in clock ticks: busy (not idle or waiting for I/O) and in all. */
function cpuTimes(): { busy: number; total: number } {
  const [line] = readFileSync('/proc/stat', 'utf8').split('\n');
  const ticks = (line ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = ticks.reduce((sum, value) => sum + value, 0);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  return { busy: total - idle, total };
}

/** CPU time (user + system, in clock ticks) of this machine's PostgreSQL processes so far. */
function databaseTicks(): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (!stat.includes('(postgres)')) continue;
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** Samples pg_stat_activity of the bench's database on a connection of its own. */
class WaitSampler {
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> = Promise.resolve();
  private readonly counts = { samples: 0, running: 0, lock: 0, wal: 0, other: 0 };
  private readonly locks: Record<string, number> = {};

  private constructor(private readonly client: pg.Client) {}

  static async start(url: string): Promise<WaitSampler> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return new WaitSampler(client);
  }

  begin(): void {
    this.timer = setInterval(() => {
      this.pending = this.pending.then(() => this.sample());
    }, SAMPLE_MS);
  }

  async end(): Promise<WaitShares> {
    clearInterval(this.timer);
    await this.pending;
    const { samples, running, lock, wal, other } = this.counts;
    const share = (count: number) => (samples === 0 ? 0 : count / samples);
    return {
      samples,
      running: share(running),
      lock: share(lock),
      wal: share(wal),
      other: share(other),
      locks: Object.fromEntries(
        Object.entries(this.locks).map(([event, count]) => [event, share(count)]),
      ),
    };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.pending;
    await this.client.end();
  }

  private async sample(): Promise<void> {
    const { rows } = await this.client.query<{ type: string | null; event: string | null }>(
      `SELECT wait_event_type AS type, wait_event AS event FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
         AND backend_type = 'client backend'`,
    );
    for (const { type, event } of rows) {
      this.counts.samples += 1;
      if (type === null) this.counts.running += 1;
      else if (type === 'Lock') {
        this.counts.lock += 1;
        this.locks[event ?? '?'] = (this.locks[event ?? '?'] ?? 0) + 1;
      } else if (event === 'WALSync' || event === 'WALWrite' || event === 'WALInsert')
        this.counts.wal += 1;
      else this.counts.other += 1;
    }
  }
}

if (values.child) {
  await runConsumer(values.url as string, values.queue as string, Number(values.concurrency));
} else {
  await main();
}

/**
 * One consumer process: `concurrency` loops of receive one, ack it, from the go line on stdin
 * until a receive finds nothing for 300 ms; then one JSON line with what it did.
 */
async function runConsumer(url: string, name: string, concurrency: number): Promise<void> {
  const broker = await open(url);
  const queue = await broker.queue(name);
  console.log('ready');
  await new Promise<void>((resolve) => {
    createInterface({ input: process.stdin }).once('line', () => resolve());
  });
  let count = 0;
  const cpuBefore = process.cpuUsage();
  const loop = async () => {
    for (;;) {
      const [delivery] = await queue.receive({ max: 1, wait: 300 });
      if (delivery === undefined) return;
      await queue.ack(delivery.token);
      count += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const cpu = process.cpuUsage(cpuBefore);
  console.log(JSON.stringify({ count, cpuMs: (cpu.user + cpu.system) / 1000 }));
  await broker.close();
}

interface Row {
  via: string;
  processes: number;
  concurrency: number;
  total: number;
  perProcess: number[];
  /** Share of the machine's CPU time busy during the drain (all cores), 0–1. */
  cpuBusy: number;
  /** CPU time per job drained, in ms: the consumer processes', the database's, the machine's. */
  cpuPerJob: { consumers: number; database: number; all: number };
  waits: WaitShares;
}

/** What the database's active backends were doing, as shares of the samples taken. */
interface WaitShares {
  samples: number;
  /** On CPU (no wait event). */
  running: number;
  /** Waiting for a heavyweight lock: a row (the queue's), a transaction or an advisory lock. */
  lock: number;
  /** Waiting for the WAL to be written or flushed (a commit that must be durable). */
  wal: number;
  other: number;
  /** Lock waits by wait event (`transactionid`/`tuple`: a row another transaction holds; `advisory`). */
  locks: Record<string, number>;
}

async function main(): Promise<void> {
  const jobs = wholeNumber('n', values.n, 1);
  const rows: Row[] = [];
  const broker = await open(values.postgres);
  try {
    for (const serverCount of wholeNumbers('servers', values.servers)) {
      const servers = await Promise.all(
        Array.from({ length: serverCount }, (_, index) => startServer(values.postgres, index)),
      );
      try {
        const urls = serverCount === 0 ? [values.postgres] : servers.map((server) => server.url);
        const via =
          serverCount === 0 ? 'open(postgres://…)' : `${serverCount} leaseq serve (stream)`;
        for (const processes of wholeNumbers('processes', values.processes, 1)) {
          for (const concurrency of wholeNumbers('concurrency', values.concurrency, 1)) {
            const row = await drain(broker, urls, jobs, processes, concurrency);
            rows.push({ via, ...row });
            console.error(
              `${via}, ${processes} × c=${concurrency}: ${formatInteger(row.total)} jobs/s (${row.perProcess.map(formatInteger).join(' / ')})`,
            );
          }
        }
      } finally {
        await Promise.all(servers.map((server) => server.stop()));
      }
    }
  } finally {
    await broker.close();
  }
  const table = markdownTable(
    [
      'consumers reach the database through',
      'processes × loops',
      'jobs/s',
      'per process',
      'CPU busy',
      'CPU ms per job: consumers / database / all',
      'backends: on CPU / lock / WAL / other',
    ],
    rows.map((row) => [
      row.via,
      `${row.processes} × ${row.concurrency}`,
      formatInteger(row.total),
      row.perProcess.map(formatInteger).join(' / '),
      percent(row.cpuBusy),
      [row.cpuPerJob.consumers, row.cpuPerJob.database, row.cpuPerJob.all]
        .map((ms) => ms.toFixed(2))
        .join(' / '),
      `${percent(row.waits.running)} / ${percent(row.waits.lock)} / ${percent(row.waits.wal)} / ${percent(row.waits.other)}`,
    ]),
  );
  const base = (via: string, concurrency: number) =>
    rows.find((row) => row.via === via && row.processes === 1 && row.concurrency === concurrency);
  const ratios = rows.flatMap((row) => {
    const one = base(row.via, row.concurrency);
    return row.processes > 1 && one !== undefined
      ? [
          `- ${row.via}, ${row.processes} processes × ${row.concurrency}: ${(row.total / one.total).toFixed(2)}× one process`,
        ]
      : [];
  });
  const lockNotes = rows.flatMap((row) => {
    const events = Object.entries(row.waits.locks).filter(([, share]) => share >= 0.01);
    return events.length === 0
      ? []
      : [
          `- ${row.via}, ${row.processes} × ${row.concurrency}, lock waits: ${events
            .sort((a, b) => b[1] - a[1])
            .map(([event, share]) => `${event} ${percent(share)}`)
            .join(', ')}`,
        ];
  });
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: here })
    .toString()
    .trim();
  const report = [
    '# PostgreSQL scale-out',
    '',
    `Written by \`npm run bench:scale\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC at commit ${commit}: ${formatInteger(jobs)} jobs published, then drained by consumer processes (each an \`open(url)\` broker with receive-one / ack-it loops) straight on one PostgreSQL database, or through \`leaseq serve\` processes over it (the remote client over the stream, consumers spread over the servers). Jobs/s from the go to the last consumer done; per process, its own share. **CPU busy**: the machine's CPU time in use during the drain (every process on it, the database's too), from /proc/stat. **CPU ms per job**: CPU time per job drained, of the consumer processes (their own count), of PostgreSQL's processes (backends, WAL writer and the rest, from /proc), and of the whole machine (CPU busy × ${availableParallelism()} cores × the drain's time): the rest of the last is the kernel's and the servers'. **backends**: what the database's active backends were doing, sampled every ${SAMPLE_MS} ms from pg_stat_activity: on CPU, waiting for a lock (the queue's row, an advisory lock), for the WAL (a durable commit), or for something else; shares of the samples.`,
    '',
    table,
    '',
    ...ratios,
    ...(lockNotes.length === 0 ? [] : ['', ...lockNotes]),
    '',
  ].join('\n');
  console.log(`\n${report}`);
  if (values.out !== undefined) {
    writeFileSync(values.out, report);
    console.log(`wrote ${values.out}`);
  }
}

type Broker = Awaited<ReturnType<typeof open>>;

/** Publishes `jobs`, drains them with the consumer processes, and measures from go to done. */
async function drain(
  broker: Broker,
  urls: string[],
  jobs: number,
  processes: number,
  concurrency: number,
): Promise<Omit<Row, 'via'>> {
  const name = `scale-${process.pid}-${Date.now().toString(36)}`;
  const queue = await broker.queue(name, { visibility: 60_000 });
  try {
    for (let start = 0; start < jobs; start += 500) {
      await queue.publishBatch(
        Array.from({ length: Math.min(500, jobs - start) }, (_, k) => ({
          payload: { n: start + k },
        })),
      );
    }
    const children = Array.from({ length: processes }, (_, index) =>
      startConsumer(urls[index % urls.length] as string, name, concurrency),
    );
    const sampler = await WaitSampler.start(values.postgres);
    try {
      await Promise.all(children.map((child) => child.ready));
      const cpuBefore = cpuTimes();
      const databaseBefore = databaseTicks();
      sampler.begin();
      const started = performance.now();
      for (const child of children) child.process.stdin?.write('go\n');
      const results = await Promise.all(children.map((child) => child.result));
      const seconds = (performance.now() - started) / 1000;
      const databaseMs = ((databaseTicks() - databaseBefore) * 1000) / TICKS_PER_SECOND;
      const waits = await sampler.end();
      const cpuAfter = cpuTimes();
      const done = results.reduce((sum, { count }) => sum + count, 0);
      if (done !== jobs) throw new Error(`drained ${done} of ${jobs} jobs`);
      const cpuBusy = (cpuAfter.busy - cpuBefore.busy) / (cpuAfter.total - cpuBefore.total);
      const consumersMs = results.reduce((sum, { cpuMs }) => sum + cpuMs, 0);
      return {
        processes,
        concurrency,
        total: done / seconds,
        perProcess: results.map(({ count }) => count / seconds),
        cpuBusy,
        cpuPerJob: {
          consumers: consumersMs / done,
          database: databaseMs / done,
          all: (cpuBusy * availableParallelism() * seconds * 1000) / done,
        },
        waits,
      };
    } finally {
      await sampler.close();
      for (const child of children) if (child.process.exitCode === null) child.process.kill();
    }
  } finally {
    await broker.deleteQueue(name);
  }
}

function startConsumer(url: string, queue: string, concurrency: number) {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      '--child',
      '--url',
      url,
      '--queue',
      queue,
      '--concurrency',
      String(concurrency),
    ],
    { cwd: here, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  const result = new Promise<{ count: number; cpuMs: number }>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line === 'ready') onReady();
      else if (line.startsWith('{')) resolve(JSON.parse(line) as { count: number; cpuMs: number });
    });
    child.once('exit', (code) => reject(new Error(`consumer exited with ${code}`)));
  });
  return { process: child as ChildProcess, ready, result };
}

/** `leaseq serve` (the built package) over the database on a free loopback port. */
function startServer(storage: string, index: number) {
  return startServe({
    cli: join(here, '../dist/cli/main.js'),
    args: ['--storage', storage, '--log-level', 'warn'],
    logFile: join(tmpdir(), `leaseq-scale-${process.pid}-${index}.log`),
  });
}
