import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { aroundAll } from 'vitest';

/**
 * The path of a directory of its own under the system's temporary directory (`prefix` and a
 * random part) for the tests of the suite this is called in: a test file, called at its top, or
 * a describe block. The directory is made, empty and private, before the suite's beforeAll hooks
 * and removed with all it holds after its afterAll hooks, whether its tests passed or failed and
 * even when one of those hooks threw (which stops the afterAll hooks after it).
 *
 * It is made as the suite starts, not when the file is collected: Vitest runs no hook of a suite
 * whose tests are all skipped or filtered out (`-t`), and a directory made at collection stayed
 * behind, empty. The path is known at once, so URLs may name it at collection; nothing may
 * write in it before the suite starts.
 */
export function temporaryDirectory(prefix: string): string {
  const path = join(tmpdir(), `${prefix}${randomBytes(6).toString('hex')}`);
  aroundAll(async (runSuite) => {
    mkdirSync(path, { mode: 0o700 });
    try {
      await runSuite();
    } finally {
      rmSync(path, { recursive: true, force: true });
    }
  });
  return path;
}
