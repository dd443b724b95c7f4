import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

/** The FIFO section's SDK example: plain JavaScript in a ts block, run as written. */
const FIFO_EXAMPLE = /## FIFO queues[\s\S]*?```ts\n([\s\S]*?)```/.exec(DOC)?.[1] ?? '';

describe('docs/sqs.md FIFO example', () => {
  let fifoServer: SqsTestServer;

  beforeAll(async () => {
    fifoServer = await startSqsServer();
  });

  afterAll(async () => {
    await fifoServer?.close();
  });

  it('runs as written and prints what the text says', { timeout: 60_000 }, async () => {
    expect(FIFO_EXAMPLE).toContain("FifoQueue: 'true'");
    const child = execFile('node', ['--input-type=module'], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
    });
    const output = new Promise<string>((resolve, reject) => {
      let stdout = '';
      child.stdout?.on('data', (chunk: string) => {
        stdout += chunk;
      });
      child.on('error', reject);
      child.on('exit', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`exit ${code}`)),
      );
    });
    child.stdin?.end(FIFO_EXAMPLE.replaceAll('http://127.0.0.1:7700', fifoServer.baseUrl));
    const lines = (await output).trim().split('\n');
    const sent = lines
      .filter((line) => line.startsWith('sent ') && !line.startsWith('sent again'))
      .map((line) => line.split(' '));
    expect(sent).toHaveLength(3);
    expect(lines).toContain(`sent again ${sent[0]?.[1]} ${sent[0]?.[2]}`);
    expect(lines.filter((line) => line.startsWith('received '))).toEqual([
      'received ada {"customer":"ada","amount":10}',
      'received bob {"customer":"bob","amount":5}',
      'received ada {"customer":"ada","amount":7}',
    ]);
  });
});
