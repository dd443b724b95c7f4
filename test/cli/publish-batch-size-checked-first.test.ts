import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// `publish --file --batch-size` that is no count is the command line's mistake (exit code 2)
// whatever the server: checked before it is reached, as every other flag is, not only once the
// server answered (no server: exit code 1 for want of one, the flag never looked at).

let gone: string;
let dir: string;

beforeAll(async () => {
  // A server's address once it is closed: nothing answers there.
  const server = await startTestServer();
  gone = server.baseUrl;
  await server.close();
  dir = mkdtempSync(join(tmpdir(), 'leaseq-cli-batch-size-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('publish --batch-size that is no count', () => {
  for (const size of ['0', 'ten']) {
    it(`exits 2 before the server is reached (--batch-size ${size})`, async () => {
      const file = join(dir, 'jobs.jsonl');
      writeFileSync(file, '{}\n');
      const argv = ['publish', 'q', '--file', file, '--batch-size', size];
      expect(await leaseq(argv, { env: { LEASEQ_SERVER: gone } })).toEqual({
        code: 2,
        stdout: '',
        stderr: `leaseq publish: --batch-size must be an integer from 1 to 9007199254740991, got "${size}"\nsee leaseq publish --help\n`,
      });
      // From standard input as well, nothing read.
      expect(
        await leaseq(argv.with(3, '-'), { env: { LEASEQ_SERVER: gone }, stdin: '{}\n' }),
      ).toEqual({
        code: 2,
        stdout: '',
        stderr: `leaseq publish: --batch-size must be an integer from 1 to 9007199254740991, got "${size}"\nsee leaseq publish --help\n`,
      });
    });
  }
});
