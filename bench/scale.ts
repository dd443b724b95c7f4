// Scale-out on PostgreSQL: one backlog drained by 1, 2 and 4 consumer processes (each with 1
// and 8 receive/ack loops), straight on the database and through 1 and 2 `leaseq serve`
// processes over it. Prints the jobs/s in total and per process.
// Run (root): npm run bench:scale [-- --n 10000 --processes 1,2,4 --concurrency 1,8 --servers 0,1,2
//   --out bench/results/scale.md]
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { open } from '../src/index.js';
import { startServe } from './lib/serve.js';
import { formatInteger, markdownTable } from './table.js';

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
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

const numbers = (text: string) => text.split(',').map(Number);

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
  const loop = async () => {
    for (;;) {
      const [delivery] = await queue.receive({ max: 1, wait: 300 });
      if (delivery === undefined) return;
      await queue.ack(delivery.token);
      count += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  console.log(JSON.stringify({ count }));
  await broker.close();
}

interface Row {
  via: string;
  processes: number;
  concurrency: number;
  total: number;
  perProcess: number[];
}

async function main(): Promise<void> {
  const jobs = Number(values.n);
  const rows: Row[] = [];
  const broker = await open(values.postgres);
  try {
    for (const serverCount of numbers(values.servers)) {
      const servers = await Promise.all(
        Array.from({ length: serverCount }, (_, index) => startServer(values.postgres, index)),
      );
      try {
        const urls = serverCount === 0 ? [values.postgres] : servers.map((server) => server.url);
        const via =
          serverCount === 0 ? 'open(postgres://…)' : `${serverCount} leaseq serve (stream)`;
        for (const processes of numbers(values.processes)) {
          for (const concurrency of numbers(values.concurrency)) {
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
    ['consumers reach the database through', 'processes × loops', 'jobs/s', 'per process'],
    rows.map((row) => [
      row.via,
      `${row.processes} × ${row.concurrency}`,
      formatInteger(row.total),
      row.perProcess.map(formatInteger).join(' / '),
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
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: here })
    .toString()
    .trim();
  const report = [
    '# PostgreSQL scale-out',
    '',
    `Written by \`npm run bench:scale\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC at commit ${commit}: ${formatInteger(jobs)} jobs published, then drained by consumer processes (each an \`open(url)\` broker with receive-one / ack-it loops) straight on one PostgreSQL database, or through \`leaseq serve\` processes over it (the remote client over the stream, consumers spread over the servers). Jobs/s from the go to the last consumer done; per process, its own share.`,
    '',
    table,
    '',
    ...ratios,
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
    try {
      await Promise.all(children.map((child) => child.ready));
      const started = performance.now();
      for (const child of children) child.process.stdin?.write('go\n');
      const counts = await Promise.all(children.map((child) => child.result));
      const seconds = (performance.now() - started) / 1000;
      const done = counts.reduce((sum, count) => sum + count, 0);
      if (done !== jobs) throw new Error(`drained ${done} of ${jobs} jobs`);
      return {
        processes,
        concurrency,
        total: done / seconds,
        perProcess: counts.map((count) => count / seconds),
      };
    } finally {
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
  const result = new Promise<number>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line === 'ready') onReady();
      else if (line.startsWith('{')) resolve((JSON.parse(line) as { count: number }).count);
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
