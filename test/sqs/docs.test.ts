import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SqsTestServer, startSqsServer } from './helpers.js';

/** The AWS CLI blocks of docs/sqs.md, in order: they must work as written, as one session. */
const DOC = readFileSync(new URL('../../docs/sqs.md', import.meta.url), 'utf8');
const BLOCKS = [...DOC.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] as string);
const hasAwsCli = spawnSync('aws', ['--version']).status === 0;

let server: SqsTestServer;
let dir: string;

beforeAll(async () => {
  server = await startSqsServer();
  dir = mkdtempSync(join(tmpdir(), 'leaseq-sqs-docs-'));
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!hasAwsCli)('docs/sqs.md (needs the AWS CLI)', () => {
  it('runs every AWS CLI example', { timeout: 120_000 }, async () => {
    expect(BLOCKS.length).toBeGreaterThanOrEqual(5);
    const script = ['set -euo pipefail', ...BLOCKS].join('\n');
    const { stdout } = await promisify(execFile)('bash', ['-c', script], {
      cwd: dir,
      env: { ...process.env, LEASEQ: server.baseUrl },
      encoding: 'utf8',
    });
    expect(stdout).toContain(`"QueueUrl": "${server.baseUrl}/sqs/000000000000/cli-demo"`);
    expect(stdout).toContain('"Body": "hello"');
    expect(stdout).toContain('"ApproximateNumberOfMessages": "0"');
    const list = await fetch(`${server.baseUrl}/v1/queues`);
    expect(((await list.json()) as { queues: unknown[] }).queues).toEqual([]);
  });
});
