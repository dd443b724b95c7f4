import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

beforeAll(() => {
  if (!existsSync(`${ROOT}dist/index.js`)) {
    throw new Error('dist/ is missing: run `npm run build` first');
  }
});

/** The package as its users load it, by name (Node resolves a package's own name inside it). */
describe("the package's entry points, by name, as users load them", () => {
  it('import and require give the same exports of leaseq, leaseq/testing and leaseq/server', async () => {
    const names = (loaded: string) => `
      const [main, testing, server] = ${loaded};
      console.log(JSON.stringify([typeof main.open, typeof main.work, typeof testing.Harness, typeof server.startServer]));`;
    const esm = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        names(
          "await Promise.all([import('leaseq'), import('leaseq/testing'), import('leaseq/server')])",
        ),
      ],
      { cwd: ROOT },
    );
    const cjs = await run(
      process.execPath,
      [
        '--input-type=commonjs',
        '-e',
        names("['leaseq', 'leaseq/testing', 'leaseq/server'].map((name) => require(name))"),
      ],
      { cwd: ROOT },
    );
    const expected = JSON.stringify(['function', 'function', 'function', 'function']);
    expect(esm.stdout.trim()).toBe(expected);
    expect(cjs.stdout.trim()).toBe(expected);
  });
});
