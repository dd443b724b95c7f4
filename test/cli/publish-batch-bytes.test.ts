import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../src/core/index.js';
import { type Broker, open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq publish --file` with jobs larger together than one request takes: its batches are cut
// by bytes as well as by count, and a job no request can hold is refused by its line.

/** The server's maxBodyBytes (and maxPayloadBytes: a job may fill a request). */
const MAX_BODY = 8 * 1024;

let real: Broker;
let close: () => Promise<void>;
let env: Record<string, string>;
let dir: string;
/** The jobs of each publish the server ran, by queue. */
const publishes = new Map<string, number[]>();
let counter = 0;

beforeAll(async () => {
  real = await open('memory:');
  const broker = withWrappedQueues(real, (queue) =>
    Object.assign(Object.create(queue), {
      execute: (operations: readonly Operation[]) => {
        for (const operation of operations) {
          if (operation.type !== 'publish') continue;
          const sizes = publishes.get(queue.name) ?? [];
          sizes.push(operation.jobs.length);
          publishes.set(queue.name, sizes);
        }
        return queue.execute(operations);
      },
    }),
  );
  const app = await createApp({
    receiptSecret: 'test-secret-of-at-least-32-characters',
    broker,
    limits: { maxBodyBytes: MAX_BODY, maxPayloadBytes: MAX_BODY },
  });
  env = { LEASEQ_SERVER: await app.listen({ host: '127.0.0.1', port: 0 }) };
  close = async () => {
    await app.close();
    await real.close();
  };
  dir = mkdtempSync(join(tmpdir(), 'leaseq-cli-bytes-'));
});

afterAll(async () => {
  await close();
  rmSync(dir, { recursive: true, force: true });
});

async function created(): Promise<string> {
  const name = `bytes${++counter}`;
  expect((await leaseq(['queue', 'create', name], { env })).code).toBe(0);
  return name;
}

async function ready(name: string): Promise<string[]> {
  return [...(await (await real.queue(name)).inspect()).ready];
}

function jobsFile(jobs: readonly object[]): string {
  const file = join(dir, `jobs${++counter}.jsonl`);
  writeFileSync(file, `${jobs.map((job) => JSON.stringify(job)).join('\n')}\n`);
  return file;
}

/** A job whose JSON, as the client sends it (delay and priority filled in), is `bytes`. */
function jobOf(id: string, bytes: number): { id: string; payload: string } {
  const bare = JSON.stringify({ id, payload: '', delay: 0, priority: 0 }).length;
  return { id, payload: 'x'.repeat(bytes - bare) };
}

const TOO_LARGE =
  /^leaseq publish: line (\d+) is a job of (\d+) bytes of JSON, more than a request to the server takes: at most (\d+) bytes of jobs, its maxBodyBytes being 8192 \((\d+) jobs were published before it\)\n$/;

describe('leaseq publish --file with jobs larger than one request takes together', () => {
  for (const transport of ['stream', 'http']) {
    it(`cuts its batches by bytes as well as by count, each within maxBodyBytes (${transport})`, async () => {
      const name = await created();
      // 40 jobs of 1 KB: 40 KB in all, five times what one request takes.
      const ids = Array.from({ length: 40 }, (_, n) => `job-${n + 1}`);
      const file = jobsFile(ids.map((id) => ({ id, payload: 'x'.repeat(1000) })));
      const run = await leaseq(['publish', name, '--file', file, '--transport', transport], {
        env,
      });
      expect(run).toEqual({
        code: 0,
        stdout: `published 40 jobs (0 duplicates) to ${name}\n`,
        stderr: '',
      });
      expect(await ready(name)).toEqual(ids);
      // As many as fit in each: the batches before the last are full, and alike.
      const sizes = publishes.get(name) ?? [];
      expect(sizes.length).toBeGreaterThan(4);
      expect(new Set(sizes.slice(0, -1)).size).toBe(1);
      expect((sizes[0] as number) * 1000).toBeLessThan(MAX_BODY);
      expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(40);

      // --batch-size still cuts by count where that comes first.
      const counted = await created();
      expect(
        await leaseq(['publish', counted, '--file', file, '--batch-size', '3', '--json'], { env }),
      ).toMatchObject({ code: 0, stderr: '' });
      expect(publishes.get(counted)).toEqual([...Array(13).fill(3), 1]);
    });

    it(`refuses a job no request can hold by its line, with its batch, sending nothing after it (${transport})`, async () => {
      const name = await created();
      const small = Array.from({ length: 5 }, (_, n) => ({ id: `s${n + 1}`, payload: n }));
      const file = jobsFile([
        ...small,
        { id: 'large', payload: 'x'.repeat(MAX_BODY) },
        { id: 'after', payload: 7 },
      ]);
      const run = await leaseq(
        ['publish', name, '--file', file, '--batch-size', '2', '--transport', transport],
        { env },
      );
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      const said = TOO_LARGE.exec(run.stderr);
      expect(said, run.stderr).not.toBeNull();
      const [, line, bytes, , before] = said as RegExpExecArray;
      expect([line, before]).toEqual(['6', '4']);
      expect(Number(bytes)).toBeGreaterThan(MAX_BODY);
      // Lines 1–4 went in two batches; line 5, in the batch of line 6, did not, nor line 7.
      expect(await ready(name)).toEqual(['s1', 's2', 's3', 's4']);
      expect(publishes.get(name)).toEqual([2, 2]);
    });

    it(`takes a job as large as a request holds, and refuses one a byte larger (${transport})`, async () => {
      const name = await created();
      // What a request holds of jobs, as the refusal of a far larger one says.
      const probe = await leaseq(
        [
          'publish',
          name,
          '--file',
          jobsFile([{ id: 'far', payload: 'x'.repeat(2 * MAX_BODY) }]),
          '--transport',
          transport,
        ],
        { env },
      );
      const room = Number(TOO_LARGE.exec(probe.stderr)?.[3]);
      expect(room, probe.stderr).toBeGreaterThan(MAX_BODY - 200);
      expect(room).toBeLessThan(MAX_BODY);
      // The full one goes alone, after the small one before it: nothing refused by the server.
      const file = jobsFile([{ id: 'before', payload: 1 }, jobOf('full', room)]);
      expect(
        await leaseq(['publish', name, '--file', file, '--transport', transport], { env }),
      ).toEqual({ code: 0, stdout: `published 2 jobs (0 duplicates) to ${name}\n`, stderr: '' });
      expect(publishes.get(name)).toEqual([1, 1]);
      const over = await leaseq(
        ['publish', name, '--file', jobsFile([jobOf('over', room + 1)]), '--transport', transport],
        { env },
      );
      expect(over.code).toBe(1);
      expect(TOO_LARGE.exec(over.stderr)?.slice(1), over.stderr).toEqual([
        '1',
        String(room + 1),
        String(room),
        '0',
      ]);
      expect(await ready(name)).toEqual(['before', 'full']);
    });
  }
});
