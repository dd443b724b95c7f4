import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envName, flagName, SETTINGS } from '../../src/server/index.js';
import { startTestServer, type TestServer } from './helpers.js';

/** The shell blocks of docs/http-api.md, in order: they must work as written, as one session. */
const DOC = readFileSync(new URL('../../docs/http-api.md', import.meta.url), 'utf8');
const BLOCKS = [...DOC.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] as string);
const hasCurl = spawnSync('curl', ['--version']).status === 0;
const MARK = '@@block@@';

let server: TestServer;
let dir: string;

beforeAll(async () => {
  server = await startTestServer({ url: 'memory:' });
  dir = mkdtempSync(join(tmpdir(), 'leaseq-docs-'));
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!hasCurl)('docs/http-api.md (needs curl)', () => {
  it('runs every example; only those marked "→ error" answer an error', async () => {
    expect(BLOCKS.length).toBeGreaterThan(25);
    const script = [
      'set -euo pipefail',
      ...BLOCKS.flatMap((block) => [`echo ${MARK}`, block]),
    ].join('\n');
    // Asynchronously: the server answering curl runs in this process.
    const { stdout: output } = await promisify(execFile)('bash', ['-c', script], {
      cwd: dir,
      env: { ...process.env, LEASEQ: server.baseUrl },
      encoding: 'utf8',
      timeout: 30_000,
    });
    const outputs = output.split(`${MARK}\n`).slice(1);
    expect(outputs).toHaveLength(BLOCKS.length);
    BLOCKS.forEach((block, index) => {
      const printed = outputs[index] as string;
      if (block.includes('# → error')) expect(printed, block).toContain('"error"');
      else expect(printed, block).not.toContain('"error"');
    });
    // Every route of the API has an example.
    for (const route of [
      '/jobs/batch',
      '/receive',
      '/operations',
      '/ack/batch',
      '/nack/batch',
      '/extend/batch',
      '/sessions/close',
      '/dead-letters/purge',
      '/schedules',
      '/inspect',
      '/stats',
      '/v1/stats',
      '/v1/me',
      '/v1/limits',
      '/deliveries',
      '/openapi.json',
    ]) {
      expect(DOC, route).toContain(`${route}`);
    }
  });
});

describe.skipIf(!hasCurl)('README.md quick start (needs curl)', () => {
  it('runs the curl blocks as written: the receipt is carried, the ack answers true', async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
      .map((match) => match[1] as string)
      .filter((block) => block.includes('curl'));
    expect(blocks.length).toBeGreaterThan(0);
    const { stdout } = await promisify(execFile)(
      'bash',
      ['-c', ['set -euo pipefail', ...blocks].join('\n')],
      {
        cwd: dir,
        env: { ...process.env, LEASEQ: server.baseUrl },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(stdout).not.toContain('"error"');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('{"acked":true}');
    // Run again on the same server: the flow does not depend on a fresh storage.
    const again = await promisify(execFile)('bash', ['-c', blocks.join('\n')], {
      cwd: dir,
      env: { ...process.env, LEASEQ: server.baseUrl },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(again.stdout.trimEnd().split('\n').at(-1)).toBe('{"acked":true}');
  });
});

describe('docs/operations.md', () => {
  it('names every setting as a file key, an environment variable and a flag', () => {
    const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    for (const { name } of SETTINGS) {
      const cells = [name, envName(name), `--${flagName(name)}`].map(
        (cell) => `\\s*\`${cell}\`\\s*`,
      );
      expect(operations).toMatch(new RegExp(`^\\|${cells.join('\\|')}\\|`, 'm'));
    }
  });
});
