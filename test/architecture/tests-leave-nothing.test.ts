import { execFile } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { POSTGRES_URL, postgresSkipReason, withPostgresClient } from '../crash/postgres.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Files that keep storage of their own (a temporary directory, a PostgreSQL database) or use a
 * helper that does: workerEngines, serverStorages, useConformanceEngines.
 */
const FILES = [
  'test/broker/execute.test.ts',
  'test/broker/handoff.test.ts',
  'test/broker/open-options.test.ts',
  'test/broker/sqlite-shared-wake.test.ts',
  'test/conformance/cancel.test.ts',
  'test/engine/commit-kinds.test.ts',
  'test/engine/dead-letter-page-reads.test.ts',
  'test/engine/delivery-page-plans.test.ts',
  'test/engine/postgres-refusals.test.ts',
  'test/engine/queue-incarnation.test.ts',
  'test/engine/scaling-dead-letters.test.ts',
  'test/engine/scaling-delayed.test.ts',
  'test/engine/scaling-groups.test.ts',
  'test/engine/scaling-remembered.test.ts',
  'test/engine/scaling-sessions.test.ts',
  'test/engine/scaling-waiting.test.ts',
  'test/engine/sqlite-lock-wait.test.ts',
  'test/engine/sqlite-plans.test.ts',
  'test/engine/sqlite-temp-files.test.ts',
  'test/engine/stats-of-queues.test.ts',
  'test/engine/storage-errors.test.ts',
  'test/engine/wal-sync.test.ts',
  'test/examples/run.test.ts',
  'test/server/dead-letters-payload-reads.test.ts',
  'test/server/metrics-refused-publishes.test.ts',
  'test/server/queue-create.test.ts',
  'test/server/stored-receipt-secret.test.ts',
  'test/server/text.test.ts',
  'test/stream/docs.test.ts',
  'test/worker/fetch.test.ts',
];

/** The databases named as scratchDatabase names them: leaseq_<label>_<pid>_<random>. */
async function scratchDatabases(): Promise<{ name: string; pid: number }[]> {
  const { rows } = await withPostgresClient((client) =>
    client.query<{ datname: string }>(
      String.raw`SELECT datname FROM pg_database WHERE datname ~ '^leaseq_\w+_\d+_[0-9a-z]+$'`,
    ),
  );
  return rows.map((row) => ({
    name: row.datname,
    pid: Number(/_(\d+)_[0-9a-z]+$/.exec(row.datname)?.[1]),
  }));
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A directory of this test's own, with an empty `tmp` in it for a child run's TMPDIR. */
function workspace(): { base: string; temporary: string } {
  const base = mkdtempSync(join(tmpdir(), 'leaseq-leftovers-'));
  made.push(base);
  const temporary = join(base, 'tmp');
  mkdirSync(temporary);
  return { base, temporary };
}

/** The environment of a child Vitest run: its own TMPDIR, none of this run's VITEST settings. */
function childEnv(temporary: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TMPDIR: temporary,
    LEASEQ_TEST_POSTGRES_URL: POSTGRES_URL,
  };
  for (const key of Object.keys(env)) if (key.startsWith('VITEST')) delete env[key];
  return env;
}

describe('test files make their storage before their tests, not as they are collected', () => {
  // Vitest runs no hook of a file whose tests are all skipped or filtered out (`-t`): what such
  // a file made as it was collected, its afterAll never removed. Listing the tests collects
  // every file and runs no hook at all.
  it('listing their tests leaves nothing in the temporary directory and no database', async () => {
    const { base, temporary } = workspace();
    const listing = join(base, 'tests.json');
    const postgresSkip = await postgresSkipReason();
    const before =
      postgresSkip === undefined ? new Set((await scratchDatabases()).map((db) => db.name)) : null;

    await run(
      process.execPath,
      [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'list', `--json=${listing}`, ...FILES],
      { cwd: ROOT, env: childEnv(temporary), maxBuffer: 16 * 1024 * 1024 },
    );

    const listed = JSON.parse(readFileSync(listing, 'utf8')) as { file: string }[];
    const files = new Set(listed.map((test) => test.file.slice(ROOT.length)));
    let databases: string[] = [];
    if (before !== null) {
      // Another run's database is either gone or still used by a live process.
      databases = (await scratchDatabases())
        .filter((db) => !before.has(db.name) && !running(db.pid))
        .map((db) => db.name);
      await withPostgresClient(async (client) => {
        for (const name of databases) await client.query(`DROP DATABASE IF EXISTS ${name}`);
      });
    }
    expect({ directories: readdirSync(temporary), databases }).toEqual({
      directories: [],
      databases: [],
    });
    expect([...files].sort()).toEqual([...FILES].sort());
  }, 240_000);
});

describe('temporaryDirectory', () => {
  it('removes its directory after a failed test, after an afterAll that threw, and makes none for a skipped suite', async () => {
    const { base, temporary } = workspace();
    symlinkSync(join(ROOT, 'node_modules'), join(base, 'node_modules'));
    writeFileSync(
      join(base, 'vitest.config.mjs'),
      "export default { test: { include: ['*.test.ts'] } };\n",
    );
    writeFileSync(
      join(base, 'fixture.test.ts'),
      `import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { temporaryDirectory } from ${JSON.stringify(join(ROOT, 'test/temporary-directory.ts'))};

const outer = temporaryDirectory('fixture-file-');
afterAll(() => {
  throw new Error('a close that failed');
});
describe('a suite of its own', () => {
  const inner = temporaryDirectory('fixture-suite-');
  it('writes in both directories, then fails', () => {
    writeFileSync(join(outer, 'a.db'), 'a');
    writeFileSync(join(inner, 'b.db'), 'b');
    expect('written').toBe('checked');
  });
});
describe('a suite whose tests are skipped', () => {
  temporaryDirectory('fixture-skipped-');
  it.skip('never runs', () => {});
});
`,
    );
    const report = join(base, 'report.json');
    const exit = await run(
      process.execPath,
      [
        join(ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--root',
        base,
        '--reporter=json',
        `--outputFile=${report}`,
      ],
      { cwd: base, env: childEnv(temporary) },
    ).then(
      () => 0,
      (error: { code?: number }) => error.code,
    );

    const results = JSON.parse(readFileSync(report, 'utf8')) as {
      testResults: {
        message: string;
        assertionResults: { title: string; status: string; failureMessages: string[] }[];
      }[];
    };
    const [file] = results.testResults;
    expect(exit).toBe(1);
    expect(file?.message).toContain('a close that failed');
    expect(
      file?.assertionResults.map((test) => [test.title, test.status, test.failureMessages.join()]),
    ).toEqual([
      ['writes in both directories, then fails', 'failed', expect.stringContaining("'checked'")],
      ['never runs', 'skipped', ''],
    ]);
    expect(readdirSync(temporary)).toEqual([]);
  }, 120_000);
});

describe('the servers of the worker suites', () => {
  it('are closed after each file that started them, not only after the first file of a Vitest worker', async () => {
    const { base, temporary } = workspace();
    symlinkSync(join(ROOT, 'node_modules'), join(base, 'node_modules'));
    const records = join(base, 'records');
    mkdirSync(records);
    // As the suite runs: a worker runs its files in one module graph (isolate: false).
    writeFileSync(
      join(base, 'vitest.config.mjs'),
      "export default { test: { include: ['*.test.ts'], isolate: false, maxWorkers: 1 } };\n",
    );
    const files = ['first', 'second'];
    for (const name of files) {
      writeFileSync(
        join(base, `${name}.test.ts`),
        `import { writeFileSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { harnessFor, workerEngines } from ${JSON.stringify(join(ROOT, 'test/worker/engines.ts'))};

const listening = () =>
  process.getActiveResourcesInfo().filter((kind) => kind === 'TCPServerWrap').length;
// Registered first, so it runs after the file's other afterAll hooks.
afterAll(async () => {
  // A closed server's handle goes a moment after its close.
  for (let waited = 0; listening() > 0 && waited < 3000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  writeFileSync(${JSON.stringify(join(records, name))}, String(listening()));
});
const stream = (await workerEngines()).find((engine) => engine.name === 'stream');
const open = harnessFor(stream as never);
it('opens a harness over the stream', async () => {
  const harness = await open();
  await harness.queue.publish({ id: 'one' });
  expect(listening()).toBe(1);
});
`,
      );
    }
    await run(
      process.execPath,
      [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--root', base],
      { cwd: base, env: childEnv(temporary) },
    );
    const listening = Object.fromEntries(
      files.map((name) => [name, Number(readFileSync(join(records, name), 'utf8'))]),
    );
    expect(listening).toEqual({ first: 0, second: 0 });
    expect(readdirSync(temporary)).toEqual([]);
  }, 120_000);
});
