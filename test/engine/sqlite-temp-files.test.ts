import { spawn } from 'node:child_process';
import { mkdirSync, watch } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../temporary-directory.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHILD = fileURLToPath(new URL('./sqlite-temp-files-child.ts', import.meta.url));
const dir = temporaryDirectory('leaseq-temp-files-');

/** Runs the child with SQLite's temporary directory at `temporary`; its one line of output. */
function runChild(database: string, temporary: string, jobs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, database, String(jobs)], {
      cwd: ROOT,
      env: { ...process.env, SQLITE_TMPDIR: temporary },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`child exited ${code}: ${err}`)),
    );
  });
}

describe('SQLite engine: no temporary files', () => {
  it('reserves and acks 2000 jobs in one call each without a file in the temporary directory', async () => {
    const temporary = join(dir, 'tmp');
    mkdirSync(temporary);
    // Any file SQLite makes there, even one deleted at once, is an event.
    const seen: string[] = [];
    const watcher = watch(temporary, (event, name) => seen.push(`${event} ${name}`));
    try {
      const line = await runChild(join(dir, 'big.db'), temporary, 2000);
      expect(JSON.parse(line)).toEqual({ reserved: 2000, acked: 2000 });
      // Events are delivered by the event loop: let any that are queued arrive.
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      watcher.close();
    }
    expect(seen).toEqual([]);
  }, 30_000);
});
