/**
 * The comparative benchmark: the same workloads against leaseq in every mode and against other
 * job queues on the servers of this machine, each run in its own child process bounded in time,
 * the systems taking turns so that a slow minute of the machine does not fall on one system.
 *
 *   npm run bench                     (at the root or in bench/: builds leaseq, then runs this)
 *   npm run bench -- --runs 1 --only leaseq-memory,bullmq --skip-growth
 *   npm run bench -- --profile --only leaseq-http --skip-growth   (V8 CPU profiles of leaseq)
 *   npm run bench -- --phases w4c1,w4c32 --skip-growth --runs 1    (one workload: W4 alone)
 *
 * Writes results/latest.md (tables, targets), results/latest.svg (chart) and
 * results/latest.json (every run). It is a report: the exit code is 0 whether targets pass.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GrowthResult } from './growth.js';
import { benchArgs, wholeNumber, wholeNumbers } from './lib/args.js';
import {
  ALL_PHASES,
  chart,
  chartLink,
  cutNotes,
  figures,
  growthTable,
  growthVerdicts,
  LIBRARY_WORKLOADS,
  type Outcome,
  resultsTable,
  verdicts,
} from './lib/report.js';
import { type RunningServer, startServe } from './lib/serve.js';
import { isSubjectName, SUBJECTS, type SubjectName } from './subjects/index.js';
import { vacuumPostgres } from './subjects/subject.js';
import type { WorkloadResult } from './workload.js';

const benchDir = fileURLToPath(new URL('.', import.meta.url));
const rootDir = join(benchDir, '..');
const resultsDir = join(benchDir, 'results');

const USAGE = `
usage: npm run bench [-- options]   (at the root or in bench/; builds leaseq first)

Runs workloads W1-W4 against leaseq (memory, SQLite fsync and os, PostgreSQL, the stream and
HTTP through \`leaseq serve\`) and the other queues of this machine (RabbitMQ, BullMQ on Redis,
pg-boss), then the cost growth with the backlog. Writes results/latest.md, .svg and .json.

  --runs N            runs per system, the figure is their median (default 3)
  --n N               jobs per workload (default 20000)
  --only A,B          only these systems: ${SUBJECTS.map((subject) => subject.name).join(', ')}
  --phases A,B        only these workloads: ${ALL_PHASES.join(', ')} (default all)
  --drain-ms N        time budget of each drain (default 13000)
  --latency-jobs N    W3 jobs measured (default 2000), after --warm-up N not counted (default 2000)
  --child-ms N        longest a run's child process may take (default 180000)
  --skip-compare      no workloads, only the growth
  --skip-growth       no growth measurement
  --backlogs A,B      growth backlogs (default 1000,10000,100000,1000000)
  --growth-runs N     runs per growth backlog (default 3)
  --postgres URL      database for leaseq and pg-boss (default $LEASEQ_BENCH_POSTGRES_URL, else
                      postgres://postgres@127.0.0.1:5432/test)
  --profile           V8 CPU profiles of leaseq (results/profiles/; read them with profile.ts)
  --out PATH          where the report goes, without extension (default results/latest)
`;
const { values } = benchArgs(USAGE, {
  options: {
    runs: { type: 'string', default: '3' },
    n: { type: 'string', default: '20000' },
    'latency-jobs': { type: 'string', default: '2000' },
    'warm-up': { type: 'string', default: '2000' },
    only: { type: 'string' },
    'skip-growth': { type: 'boolean', default: false },
    'skip-compare': { type: 'boolean', default: false },
    backlogs: { type: 'string', default: '1000,10000,100000,1000000' },
    'growth-runs': { type: 'string', default: '3' },
    'drain-ms': { type: 'string', default: '13000' },
    'child-ms': { type: 'string', default: '180000' },
    postgres: {
      type: 'string',
      default: process.env.LEASEQ_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    },
    profile: { type: 'boolean', default: false },
    phases: { type: 'string', default: ALL_PHASES.join(',') },
    out: { type: 'string', default: join(resultsDir, 'latest') },
  },
});
const runCount = wholeNumber('runs', values.runs, 1);
/** Whether the PostgreSQL server runs autovacuum (`on`/`off`), once a run used it. */
let autovacuum: string | undefined;
const jobCount = wholeNumber('n', values.n, 1);
const latencyJobs = wholeNumber('latency-jobs', values['latency-jobs'], 1);
const warmUpJobs = wholeNumber('warm-up', values['warm-up']);
const childMs = wholeNumber('child-ms', values['child-ms'], 1);
wholeNumber('drain-ms', values['drain-ms'], 1);
const growthRuns = wholeNumber('growth-runs', values['growth-runs'], 1);
const backlogs = wholeNumbers('backlogs', values.backlogs, 1);
const selected = (values.only?.split(',') ?? SUBJECTS.map((s) => s.name)).map((name) => {
  if (!isSubjectName(name)) refuse(`unknown system ${JSON.stringify(name)} in --only`);
  return name;
});
for (const phase of values.phases.split(',')) {
  if (!ALL_PHASES.includes(phase)) refuse(`unknown workload ${JSON.stringify(phase)} in --phases`);
}

/** A bad option value: said with the usage, exit 2, before anything runs. */
function refuse(problem: string): never {
  console.error(`${problem}\n${USAGE}`);
  process.exit(2);
}
const profileDir = join(resultsDir, 'profiles');
const started = performance.now();
/** Other work on the machine skews every figure: the report says how busy it was at the start. */
const loadAtStart = loadavg()[0] ?? 0;

ensureDependencies();
if (!existsSync(join(rootDir, 'dist/index.js')) || !existsSync(join(rootDir, 'dist/cli/main.js'))) {
  throw new Error('leaseq is not built: run `npm run build` at the root (npm run bench does)');
}
const measured = snapshotDist();
const leaseqCommit = gitDescription();
if (values.profile) mkdirSync(profileDir, { recursive: true });

const outcomes = new Map<SubjectName, Outcome<WorkloadResult>[]>();
if (!values['skip-compare']) {
  for (let run = 1; run <= runCount; run++) {
    for (const subject of selected) {
      const outcome = await runWorkload(subject, run);
      outcomes.set(subject, [...(outcomes.get(subject) ?? []), outcome]);
      console.error(`run ${run}/${runCount} ${subject.padEnd(20)} ${describe(outcome)}`);
    }
  }
}

const growth: GrowthResult[][] = [];
if (!values['skip-growth']) {
  for (const mode of ['memory', 'sqlite-fsync', 'postgres']) {
    for (const backlog of backlogs) {
      const runs: GrowthResult[] = [];
      for (let run = 1; run <= growthRuns; run++) {
        const outcome = await runGrowth(mode, backlog, run);
        console.error(`growth ${mode} ${backlog}: ${describeGrowth(outcome)}`);
        if (outcome.result !== undefined) runs.push(outcome.result);
      }
      if (runs.length > 0) growth.push(runs);
    }
  }
}

measured.remove();
const elapsed = (performance.now() - started) / 1000;
const report = writeReport(elapsed);
console.log(report.markdown);
console.log(`\n${report.verdicts.join('\n')}`);
console.log(`\nwrote ${values.out}.md, .svg and .json in ${Math.round(elapsed)} s`);

// ---------------------------------------------------------------------------------------------

async function runWorkload(subject: SubjectName, run: number): Promise<Outcome<WorkloadResult>> {
  const prefix = `lqbench-${process.pid}-${run}-${subject}`;
  const sqliteFile = join(tmpdir(), `${prefix}.db`);
  const leaseq = SUBJECTS.find((s) => s.name === subject)?.leaseq === true;
  const nodeFlags = values.profile && leaseq ? profileFlags(`${subject}-run${run}`) : [];
  let server: RunningServer | undefined;
  try {
    if (subject === 'leaseq-postgres' || subject === 'pg-boss') {
      autovacuum = await vacuumPostgres(values.postgres);
    }
    if (subject === 'leaseq-http' || subject === 'leaseq-stream') {
      server = await startServer(sqliteFile, `${prefix}.log`, nodeFlags.length > 0);
    }
    const args = [
      'workload.ts',
      '--subject',
      subject,
      '--prefix',
      prefix,
      '--n',
      String(jobCount),
      '--latency-jobs',
      String(latencyJobs),
      '--warm-up',
      String(warmUpJobs),
      '--drain-ms',
      values['drain-ms'],
      '--phases',
      values.phases,
      '--sqlite-file',
      sqliteFile,
      '--postgres',
      values.postgres,
      ...(server === undefined ? [] : ['--http-url', server.url]),
    ];
    const outcome = await runChild<WorkloadResult>(args, childMs, nodeFlags);
    if (outcome.status !== 'ok' && server !== undefined) {
      outcome.detail = `${outcome.detail ?? ''}\nserver log:\n${server.logTail()}`;
    }
    if (outcome.status !== 'ok' && subject !== 'leaseq-memory' && server === undefined) {
      // Queues left behind on the servers (or in the file) go with a cleanup child.
      await runChild([...args, '--cleanup'], 60_000);
    }
    return outcome;
  } catch (error) {
    return { status: 'failed', ms: 0, detail: String(error) };
  } finally {
    await server?.stop();
    removeSqlite(sqliteFile);
  }
}

async function runGrowth(mode: string, backlog: number, run: number) {
  const sqliteFile = join(tmpdir(), `lqbench-${process.pid}-growth-${run}-${backlog}.db`);
  try {
    return await runChild<GrowthResult>(
      [
        'growth.ts',
        '--mode',
        mode,
        '--backlog',
        String(backlog),
        ...(mode === 'sqlite-fsync' ? ['--sqlite-file', sqliteFile] : []),
        ...(mode === 'postgres' ? ['--postgres', values.postgres] : []),
      ],
      childMs,
      ['--expose-gc'],
    );
  } finally {
    removeSqlite(sqliteFile);
  }
}

/**
 * A copy of the built package in the temp folder, with the root's node_modules linked beside it:
 * what every child runs, whatever rebuilds ../dist meanwhile. Removed at the end.
 */
function snapshotDist(): { dist: string; remove(): void } {
  const home = mkdtempSync(join(tmpdir(), 'lqbench-dist-'));
  const remove = () => rmSync(home, { recursive: true, force: true });
  process.once('exit', remove);
  cpSync(join(rootDir, 'dist'), join(home, 'dist'), { recursive: true });
  writeFileSync(join(home, 'package.json'), '{ "type": "module" }\n');
  symlinkSync(join(rootDir, 'node_modules'), join(home, 'node_modules'), 'dir');
  return { dist: join(home, 'dist'), remove };
}

/** The commit measured, and whether the sources differed from it. */
function gitDescription(): string {
  const git = (...args: string[]) =>
    spawnSync('git', args, { cwd: rootDir, encoding: 'utf8' }).stdout?.trim() ?? '';
  const commit = git('rev-parse', '--short', 'HEAD');
  if (commit === '') return 'outside git';
  return git('status', '--porcelain', '--', 'src') === ''
    ? `commit ${commit}`
    : `commit ${commit} with uncommitted changes in src/`;
}

function profileFlags(name: string): string[] {
  return ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}.cpuprofile`];
}

function removeSqlite(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true });
}

/**
 * Runs `node [flags] --import tsx <args>` in bench/, kills it by pid when it outlives its
 * budget, and reads its `RESULT {json}` line.
 */
function runChild<T>(
  args: readonly string[],
  budgetMs: number,
  nodeFlags: readonly string[] = [],
): Promise<Outcome<T>> {
  return new Promise((resolve) => {
    const begun = performance.now();
    const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', ...args], {
      cwd: benchDir,
      env: { ...process.env, LEASEQ_BENCH_DIST: measured.dist },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    }, budgetMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ status: 'failed', ms: performance.now() - begun, detail: error.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const ms = performance.now() - begun;
      const line = stdout.split('\n').find((text) => text.startsWith('RESULT '));
      const warnings = stderr.trim();
      if (timedOut) {
        resolve({ status: 'timeout', ms, detail: `killed after ${budgetMs / 1000} s` });
      } else if (code === 0 && line !== undefined) {
        if (warnings !== '') console.error(indent(`stderr of ${args[0]} ${args[2]}:`, warnings));
        resolve({ status: 'ok', result: JSON.parse(line.slice('RESULT '.length)) as T, ms });
      } else {
        resolve({
          status: 'failed',
          ms,
          detail: warnings.split('\n').slice(-12).join('\n') || `exit ${code ?? signal}`,
        });
      }
    });
  });
}

function indent(title: string, text: string): string {
  const lines = text.split('\n');
  const shown = lines.slice(0, 6).map((line) => `    ${line}`);
  if (lines.length > 6) shown.push(`    … ${lines.length - 6} more lines`);
  return [`  ${title}`, ...shown].join('\n');
}

/**
 * `leaseq serve` over a fresh SQLite file (default settings: fsync, info logs, which go to a
 * file in the temp folder), on a free loopback port; stopped by pid.
 */
function startServer(file: string, logName: string, profile: boolean): Promise<RunningServer> {
  return startServe({
    cli: join(measured.dist, 'cli/main.js'),
    args: ['--storage', `sqlite:${file}`],
    logFile: join(tmpdir(), logName),
    nodeFlags: profile ? profileFlags(`leaseq-server-${process.pid}-${Date.now()}`) : [],
    cwd: benchDir,
  });
}

/** bench/'s own pinned dependencies: installed from its lockfile when missing or different. */
function ensureDependencies(): void {
  const manifest = JSON.parse(readFileSync(join(benchDir, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  const stale = Object.entries(manifest.devDependencies).filter(([name, version]) => {
    try {
      const installed = JSON.parse(
        readFileSync(join(benchDir, 'node_modules', name, 'package.json'), 'utf8'),
      ) as { version: string };
      return installed.version !== version;
    } catch {
      return true;
    }
  });
  if (stale.length === 0) return;
  console.error(
    `installing bench dependencies (${stale.map(([name]) => name).join(', ')}): npm ci`,
  );
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: benchDir,
    stdio: 'inherit',
  });
  if (npm.status !== 0) throw new Error('npm ci in bench/ failed');
}

function packageVersion(path: string): string {
  try {
    return (JSON.parse(readFileSync(join(path, 'package.json'), 'utf8')) as { version: string })
      .version;
  } catch {
    return '?';
  }
}

function describe(outcome: Outcome<WorkloadResult>): string {
  const seconds = `${(outcome.ms / 1000).toFixed(1)} s`;
  const r = outcome.result;
  if (r === undefined)
    return `${outcome.status.toUpperCase()} (${seconds}): ${outcome.detail ?? ''}`;
  // A phase left out (--phases) has no figure: NaN, null once through JSON.
  const shown = (value: number | null, digits: number) =>
    value === null || !Number.isFinite(value) ? '–' : value.toFixed(digits);
  const rate = (x: { perSecond: number; jobs: number; of: number }) =>
    `${shown(x.perSecond, 0)}/s${x.jobs < x.of ? ` (${x.jobs} of ${x.of})` : ''}`;
  const library = (x: WorkloadResult['w4c1']) => (x === undefined ? '–' : rate(x));
  return `W1 ${rate(r.w1)}, W2 c=1 ${rate(r.w2c1)}, c=32 ${rate(r.w2c32)}, W3 p50 ${shown(r.w3.p50, 2)} ms p99 ${shown(r.w3.p99, 2)} ms, W4 c=1 ${library(r.w4c1)}, c=32 ${library(r.w4c32)} (${seconds})`;
}

function describeGrowth(outcome: Outcome<GrowthResult>): string {
  const r = outcome.result;
  const seconds = `${(outcome.ms / 1000).toFixed(1)} s`;
  if (r === undefined)
    return `${outcome.status.toUpperCase()} (${seconds}): ${outcome.detail ?? ''}`;
  return `publish ${Math.round(r.publishPerSecond)}/s, reserve+ack ${Math.round(r.reserveAckPerSecond)}/s, heap ${Math.round(r.heapBytesPerJob)} B/job (${seconds})`;
}

function machineLine(): string {
  const servers = new Set<string>();
  for (const runs of outcomes.values()) {
    for (const run of runs) if (run.result?.server !== undefined) servers.add(run.result.server);
  }
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const dep = (name: string) => `${name} ${packageVersion(join(benchDir, 'node_modules', name))}`;
  const root = (name: string) => `${name} ${packageVersion(join(rootDir, 'node_modules', name))}`;
  return [
    `${availableParallelism()} cores (${cpu}), ${Math.round(totalmem() / 2 ** 30)} GiB, Linux ${release()}`,
    `Node ${process.version}`,
    `load average ${loadAtStart.toFixed(2)} at the start`,
    `leaseq ${packageVersion(rootDir)} at ${leaseqCommit} (${root('better-sqlite3')}, ${root('pg')}, ${root('fastify')})`,
    `${dep('bullmq')}, ${dep('ioredis')}, ${dep('pg-boss')}, ${dep('amqplib')}`,
    [...servers].sort().join(', '),
  ]
    .filter((part) => part !== '')
    .join('; ');
}

function writeReport(seconds: number) {
  const all = figures(outcomes, latencyJobs);
  const machine = machineLine();
  const targetLines = outcomes.size === 0 ? [] : verdicts(all, latencyJobs);
  const failures = [...outcomes.entries()].flatMap(([subject, runs]) =>
    runs.flatMap((run, index) =>
      run.status === 'ok'
        ? []
        : [`- ${subject}, run ${index + 1}: ${run.status}: ${(run.detail ?? '').split('\n')[0]}`],
    ),
  );
  const lines: string[] = [
    '# leaseq: comparative benchmark',
    '',
    `Written by \`npm run bench\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC in ${Math.round(seconds)} s.`,
    '',
    `**Machine:** ${machine}.`,
    '',
  ];
  if (outcomes.size > 0) {
    lines.push(
      '## Workloads',
      '',
      `- **W1 enqueue:** ${jobCount.toLocaleString('en-US')} jobs of 100 bytes of JSON, with each system's batch API (batches of 1000, or 100 over leaseq's HTTP API, its default limit; 4 batches in flight).`,
      `- **W2 drain:** those jobs received and acked one by one, by 1 and by 32 concurrent consumers (a prefetch of 1 or 32 on RabbitMQ, a Worker's concurrency on BullMQ); each drain stops after ${Number(values['drain-ms']) / 1000} s.`,
      `- **W3 latency:** one idle consumer; ${latencyJobs.toLocaleString('en-US')} jobs (after ${warmUpJobs.toLocaleString('en-US')} not counted: a process that just started pauses while V8 compiles its hot code, in every system's client, which is start-up and not per-job latency) published one at a time, each once the previous one was acked and 1 ms more passed; the time from the publish call to the handler, in one process.`,
      `- **W4 consumer library:** the same backlog drained through each system's own consumer library with an empty handler, at most 1 and 32 handlers (or unacked messages) at once: leaseq's \`work()\` (in-process on each engine, and through \`leaseq serve\` by the remote client, on the stream and on plain HTTP), BullMQ's \`Worker\`, an amqplib consumer with a prefetch of 1 or 32 (as in W2), pg-boss's \`work\` with a batch size of 1 or 32. leaseq's \`work()\` counts only its running handlers: the jobs whose ack is on its way (up to 8 times the concurrency, at least 48) are in hand besides, so that at a concurrency of 1 its next handler runs before the last ack has returned, while a RabbitMQ prefetch counts every unacked message and BullMQ's \`Worker\` and pg-boss's \`work\` take a slot's next job only once its last one is completed. Each drain stops after ${Number(values['drain-ms']) / 1000} s. **÷ W2** is the library's figure over the same system's W2 drain: what the library costs on top of the raw calls. RabbitMQ's and BullMQ's W2 drain already is their library (the amqplib consumer, the \`Worker\`), so their W4 is the same drain once more and their ÷ W2 only shows how much it varies within a run.`,
      '',
      `Each figure is the median of ${runCount} runs (one child process per system and run, the systems taking turns), ± half the min–max range. **× best other** is the leaseq figure divided by the best figure of the systems that are not leaseq, in this same run: above 1× is better for throughput, below 1× is better for latency.`,
      '',
      '## Results',
      '',
      resultsTable(all, latencyJobs),
      '',
      "### W4: through each system's consumer library",
      '',
      resultsTable(all, latencyJobs, LIBRARY_WORKLOADS),
      '',
      ...cutNotes(all, latencyJobs).map((note) => `${note}\n`),
      chartLink(values.out),
      '',
      '## Targets',
      '',
      '```',
      ...targetLines,
      '```',
      '',
    );
    if (failures.length > 0) lines.push('Runs that failed or timed out:', '', ...failures, '');
    lines.push(
      '## How each system is driven',
      '',
      '- **leaseq**: the built package (`dist/`), through `open(url)` and the `Queue` interface: `publishBatch`, `publish`, `receive({ max: 1 })` then `ack(token)`; the idle consumer waits in `receive({ wait: 20000 })`. Memory, SQLite (`durability: fsync` and `os`, a fresh file per run), PostgreSQL, and the HTTP client against `leaseq serve` (default settings, SQLite fsync, logs at info to a file) in another process.',
      "- **RabbitMQ**: amqplib; a durable classic queue or a quorum queue; persistent messages on a confirm channel, a publish counting once confirmed; manual acks, one per message; publisher and consumer on separate connections, with Nagle's algorithm off (`noDelay`) as in every other system's client.",
      '- **BullMQ**: `addBulk` and `add` with `removeOnComplete`; a `Worker` with concurrency 1 or 32, its job counted at its `completed` event. Redis as the machine line says it runs: with its append-only file (AOF) off, a job added or completed is in memory only when the call returns; only the AOF with `appendfsync always` has it on disk then.',
      "- **pg-boss**: its defaults (`insert`, `send`; pool of 10), the drain by `fetch` and `complete` one job at a time, since its worker's default polling takes one job per 2 s interval; for W3 the queue has `notify: true` and the instance `useListenNotify`, pg-boss's low-latency delivery, with a `work` handler, each job settled (and the next one sent) once `getJobById` reads it back completed, since pg-boss completes it after the handler returns and tells no one. For W4 its `work` fetches batches of 1 or 32 (completed together after the handler), fetching again at once while batches come back full (`burstWhenBatchFull`, which pg-boss ignores for a batch of 1) and otherwise after its shortest polling interval, 0.5 s.",
      '- **leaseq W4**: `work(queue, async () => {}, { concurrency, logger: silentLogger })`, a job counted at its `acked` outcome (after its ack returned).',
      ...(autovacuum === undefined
        ? []
        : [
            `- **PostgreSQL** (leaseq and pg-boss): the database is VACUUMed and checkpointed before each run, so that no run starts from the dead rows of the runs before it (every job leaves some, in either system's tables) or writes out the pages they dirtied; autovacuum, which removes them as it goes, is ${autovacuum} on this server.`,
          ]),
      '- A RabbitMQ consumer gets a message before the broker has written it to disk (the publisher confirm comes after), while leaseq, on SQLite and PostgreSQL, hands a job out only after its publish committed: W3 compares those two paths as each system ships them.',
      '',
    );
  }
  if (growth.length > 0) {
    lines.push(
      '## Cost growth with the backlog',
      '',
      `One leaseq queue filled to each backlog (batches of 5000, 4 in flight) in a fresh process per row, after a warm-up of 10^4 jobs on another queue (another file on SQLite). Then, at that backlog, 10^4 more jobs published (batches of 100, 4 in flight) and 10^4 reserved and acked (32 consumers, one job per call), in rounds of at most half the backlog so that the queue keeps between 1 and 1.5 times the backlog; only those calls are timed. Stats: one stats call after them, median of 9 (what /metrics and the dashboard ask of every queue they show). Heap and RSS: after a full GC, the growth over the empty queue, per queued job (RSS is within the allocator's noise below 10^5 jobs; on SQLite the jobs live in the file, on PostgreSQL in the database's process). File: what the database and its WAL grew by, per job (SQLite fsync). Median of ${values['growth-runs']} runs.`,
      '',
      growthTable(growth),
      '',
      ...growthVerdicts(growth).map((line) => `- ${line}`),
      '',
    );
  }
  const markdown = lines.join('\n');
  mkdirSync(join(values.out, '..'), { recursive: true });
  writeFileSync(`${values.out}.md`, markdown);
  if (outcomes.size > 0) {
    writeFileSync(
      `${values.out}.svg`,
      chart(all, latencyJobs, machine.split('; ').slice(0, 2).join('; ')),
    );
  }
  writeFileSync(
    `${values.out}.json`,
    `${JSON.stringify({ machine, seconds, jobCount, latencyJobs, runs: Object.fromEntries(outcomes), growth }, null, 2)}\n`,
  );
  return { markdown, verdicts: targetLines };
}
