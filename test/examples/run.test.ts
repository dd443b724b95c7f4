import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { sqliteAndScratchPostgres } from '../engine/postgres-scratch.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { until } from '../until.js';

/**
 * Every file of examples/ run as its header says (`npx tsx examples/NAME.ts [url]`), on each
 * storage it names, as a process of its own: it must run to completion with the output it
 * promises, and its failure paths (a handler that throws, a signal) must do what it says. The
 * package name resolves to the sources through tsconfig.json's paths, as in a clone.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = pathToFileURL(resolve(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const RUN = ['dead-letter-queue.ts', 'transactional-ack.ts', 'worked-example.ts', 'worker.ts'];
const ADMIN_KEY = 'examples-admin-key-0123456789';

const directory = temporaryDirectory('leaseq-examples-');
const { targets, postgresSkip } = sqliteAndScratchPostgres('examples');
const [sqlite, postgres] = targets as [(typeof targets)[0], (typeof targets)[0]];
let server: TestServer;
const children: ChildProcess[] = [];
let place = 0;

beforeAll(async () => {
  server = await startTestServer({
    url: 'memory:',
    keys: [{ name: 'examples', key: ADMIN_KEY, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
});
afterAll(async () => {
  await server?.close();
});
afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

interface Run {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exit: Promise<{ code: number | null; signal: string | null }>;
}

/** Starts an example in a working directory of its own (its ./data is there). */
function start(example: string, args: string[] = [], env: Record<string, string> = {}): Run {
  const cwd = join(directory, `run-${place++}`);
  mkdirSync(cwd);
  // Only the settings the run is given: none of the examples' own from this environment.
  const { LEASEQ_API_KEY: _key, DEMO: _demo, MAIL_API_URL: _mail, ...inherited } = process.env;
  const child = spawn(
    process.execPath,
    ['--import', TSX, resolve(ROOT, 'examples', example), ...args],
    {
      cwd,
      env: { ...inherited, TSX_TSCONFIG_PATH: resolve(ROOT, 'tsconfig.json'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
  });
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const exit = new Promise<{ code: number | null; signal: string | null }>((done) => {
    child.once('close', (code, signal) => done({ code, signal }));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

/** Runs an example to its end; a run that fails shows what it wrote. */
async function run(example: string, args: string[] = [], env: Record<string, string> = {}) {
  const started = start(example, args, env);
  const exit = await started.exit;
  expect({ ...exit, stderr: exit.code === 0 ? '' : started.stderr() }).toEqual({
    code: 0,
    signal: null,
    stderr: '',
  });
  return { stdout: started.stdout(), stderr: started.stderr() };
}

/** The outcome lines the worker logged (JSON lines on stderr). */
function outcomes(stderr: string): { id: string; outcome: string; reason?: string }[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .filter((line) => line.outcome !== undefined);
}

const skipPostgres = (context: { skip: (note?: string) => void }) => {
  const reason = postgresSkip();
  if (reason !== undefined) context.skip(reason);
};

describe('the examples', () => {
  it('are all run here', () => {
    expect(readdirSync(resolve(ROOT, 'examples')).sort()).toEqual(RUN);
  });
});

describe('examples/worked-example.ts', () => {
  it('prints each step of the acceptance case, time passing to 4 before the deadline 5', async () => {
    const { stdout } = await run('worked-example.ts');
    const steps = stdout
      .trimEnd()
      .split('\n')
      .map((line) => line.split(' → ').map((part) => part.trim()) as [string, string]);
    const value = (label: RegExp) => {
      const found = steps.find(([step]) => label.test(step));
      expect(found, String(label)).toBeDefined();
      return JSON.parse((found as [string, string])[1]);
    };
    expect(value(/^reserve\(0\)/)).toEqual([
      { token: 1, id: 'a', deadline: 5, deliveryCount: 1, redelivered: false },
    ]);
    // "At 4, token 1 is live": the clock at 4, the delivery of token 1 still there.
    expect(value(/^stats\(4\)/)).toBe(4);
    expect(value(/at 4: token 1 is live/)).toEqual([
      { token: 1, id: 'a', deadline: 5, deliveryCount: 1 },
    ]);
    expect(value(/^ack\(5, 1\): deadline/)).toBe(false);
    expect(value(/^reserve\(5\)/)).toEqual([
      { token: 2, id: 'a', deadline: 10, deliveryCount: 2, redelivered: true },
    ]);
    expect(value(/^ack\(5, 1\) again/)).toBe(false);
    expect(value(/^ack\(6, 2\)/)).toBe(true);
    expect(value(/^ack\(4, 2\)/)).toMatch(/^INVALID_CLOCK/);
    expect(value(/^queueTime/)).toBe(6);
  });
});

describe('examples/transactional-ack.ts', () => {
  const twice = async (url: string) => {
    const first = await run('transactional-ack.ts', [url]);
    expect(first.stdout).toContain('debited acct-7 1250 cents for debit-42, acked');
    // Run again on the same storage: the job is acked, the ledger keeps one debit.
    const second = await run('transactional-ack.ts', [url]);
    expect(second.stdout).toContain('debit-42 was debited before: acked, not debited again');
    expect(second.stdout).toContain("[ { job_id: 'debit-42', account: 'acct-7', cents: -1250 } ]");
  };

  it('debits once on SQLite, its default storage, run twice', async () => {
    const first = await run('transactional-ack.ts');
    expect(first.stdout).toContain('debited acct-7 1250 cents for debit-42, acked');
    await twice(sqlite.url());
  }, 60_000);

  it('debits once on PostgreSQL, run twice', async (context) => {
    skipPostgres(context);
    await twice(postgres.url());
  }, 60_000);
});

describe('examples/dead-letter-queue.ts', () => {
  const runs = async (url: string[], env: Record<string, string> = {}) => {
    const { stdout, stderr } = await run('dead-letter-queue.ts', url, env);
    expect(stdout).toMatch(
      /published again: \[\n(\s+\{ id: 'invoice-\d', duplicate: true \},?\n){3}\]/,
    );
    expect(stdout).toContain('billed ada 1250 cents (invoice-1, delivery 1)');
    expect(stdout).toContain(
      'invoice-2 in invoices-dlq: died of retries-exhausted after 3 attempts, the last: billing API answered 503',
    );
    expect(stdout).toContain(
      'invoice-3 in invoices-dlq: died of invalid-payload after 1 attempt, the last: no amount',
    );
    expect(stdout).toContain('moved back: 1\nbilled acme 9900 cents (invoice-2, delivery 1)');
    expect(stdout.trimEnd().endsWith('invoices-dlq: 1 job left')).toBe(true);
    expect(outcomes(stderr).map(({ id, outcome }) => `${id} ${outcome}`)).toEqual(
      expect.arrayContaining(['invoice-2 retried', 'invoice-2 dead', 'invoice-2 acked']),
    );
  };

  it('runs on memory', async () => {
    await runs(['memory:']);
  }, 60_000);

  it('runs on SQLite, its default storage', async () => {
    await runs([]);
  }, 60_000);

  it('runs on PostgreSQL', async (context) => {
    skipPostgres(context);
    await runs([postgres.url()]);
  }, 60_000);

  it('runs through a server with API keys, the key from LEASEQ_API_KEY', async () => {
    await runs([server.baseUrl], { LEASEQ_API_KEY: ADMIN_KEY });
  }, 60_000);
});

describe('examples/worker.ts', () => {
  /** DEMO=1: the three jobs it publishes are mailed; the first signal ends it, exit code 0. */
  const demo = async (args: string[], env: Record<string, string> = {}) => {
    const worker = start('worker.ts', args, { DEMO: '1', ...env });
    const mailed = () => worker.stdout().match(/^mail to u\d@example\.com \(job [^)]+\)$/gm) ?? [];
    await until(() => mailed().length === 3 || worker.child.exitCode !== null, {
      what: 'the three demo jobs mailed',
      timeout: 30_000,
      interval: 50,
    });
    expect(worker.stderr()).not.toMatch(/Error/);
    await until(() => outcomes(worker.stderr()).length === 3, { what: 'three acks logged' });
    worker.child.kill('SIGINT');
    expect(await worker.exit).toEqual({ code: 0, signal: null });
    expect(outcomes(worker.stderr()).map(({ outcome }) => outcome)).toEqual([
      'acked',
      'acked',
      'acked',
    ]);
  };

  it('mails the demo jobs on memory, then stops at SIGINT', async () => {
    await demo(['memory:']);
  }, 60_000);

  it('mails the demo jobs on SQLite, then stops at SIGINT', async () => {
    await demo([sqlite.url()]);
  }, 60_000);

  it('mails the demo jobs on PostgreSQL, then stops at SIGINT', async (context) => {
    skipPostgres(context);
    await demo([postgres.url()]);
  }, 60_000);

  it('mails the demo jobs through a server with API keys, the key from LEASEQ_API_KEY', async () => {
    await demo([server.baseUrl], { LEASEQ_API_KEY: ADMIN_KEY });
  }, 60_000);

  describe('against a mail API', () => {
    let mail: Server;
    const sockets = new Set<Socket>();
    const calls: string[] = [];
    let mailUrl = '';

    beforeAll(async () => {
      mail = createServer((request, response) => {
        const key = String(request.headers['idempotency-key']);
        let body = '';
        request.setEncoding('utf8').on('data', (text: string) => {
          body += text;
        });
        request.on('end', () => {
          const { to } = JSON.parse(body) as { to: string };
          calls.push(`${key} ${to}`);
          const attempt = calls.filter((call) => call.startsWith(`${key} `)).length;
          if (to.startsWith('slow')) return; // never answers: the worker is stopped meanwhile
          const status = to.startsWith('refused')
            ? 422
            : to.startsWith('flaky') && attempt === 1
              ? 500
              : 200;
          response.writeHead(status).end();
        });
      });
      mail.on('connection', (socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      });
      await new Promise<void>((done) => mail.listen(0, '127.0.0.1', done));
      mailUrl = `http://127.0.0.1:${(mail.address() as { port: number }).port}/send`;
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((done) => mail?.close(done));
    });

    it('retries a failure, dead-letters a refusal and a job without recipient, acks the rest', async () => {
      const url = `sqlite:${join(directory, 'mail.db')}`;
      const broker = await open(url);
      const emails = await broker.queue('emails', { visibility: 30_000, maxDeliveries: 5 });
      await emails.publishBatch([
        { id: 'ok', payload: { to: 'ok@example.com', subject: 'a' } },
        { id: 'flaky', payload: { to: 'flaky@example.com', subject: 'b' } },
        { id: 'refused', payload: { to: 'refused@example.com', subject: 'c' } },
        { id: 'nobody', payload: { subject: 'd' } },
      ]);
      const worker = start('worker.ts', [url], { MAIL_API_URL: mailUrl });
      try {
        // The retry comes after the backoff's first delay, 1 to 2 s.
        await until(() => outcomes(worker.stderr()).length === 5, {
          what: 'five outcomes',
          timeout: 20_000,
          interval: 50,
        });
        worker.child.kill('SIGTERM');
        expect(await worker.exit).toEqual({ code: 0, signal: null });
        const logged = outcomes(worker.stderr()).map(
          ({ id, outcome, reason }) =>
            `${id} ${outcome}${reason === undefined ? '' : ` ${reason}`}`,
        );
        expect(logged.sort()).toEqual([
          'flaky acked',
          'flaky retried retryable',
          'nobody dead invalid-payload',
          'ok acked',
          'refused dead permanent',
        ]);
        const stats = await emails.stats();
        expect({ ready: stats.ready, active: stats.active, dead: stats.dead }).toEqual({
          ready: 0,
          active: 0,
          dead: 2,
        });
      } finally {
        await broker.close();
      }
    }, 60_000);

    it('gives a job still running back at the second signal, ready for the next worker', async () => {
      const url = `sqlite:${join(directory, 'slow.db')}`;
      const broker = await open(url);
      const emails = await broker.queue('emails', { visibility: 30_000, maxDeliveries: 5 });
      await emails.publish({ id: 'slow', payload: { to: 'slow@example.com', subject: 'e' } });
      const worker = start('worker.ts', [url], { MAIL_API_URL: mailUrl });
      try {
        await until(() => calls.includes('slow slow@example.com'), {
          what: 'the slow mail sent',
          timeout: 30_000,
          interval: 50,
        });
        // The first signal waits for the handler (25 s); the second gives its job back at once.
        worker.child.kill('SIGTERM');
        worker.child.kill('SIGINT');
        expect(await worker.exit).toEqual({ code: 0, signal: null });
        expect(outcomes(worker.stderr())).toMatchObject([
          { id: 'slow', outcome: 'released', reason: 'shutdown' },
        ]);
        expect(await emails.job('slow')).toMatchObject({ state: 'ready', deliveryCount: 1 });
      } finally {
        await broker.close();
      }
    }, 60_000);
  });
});
