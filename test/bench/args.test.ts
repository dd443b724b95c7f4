import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Runs a bench script as `npm run bench…` does (tsx), with these arguments. */
function bench(script: string, args: string[]) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', `bench/${script}`, ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

const SCRIPTS = [
  ['compare.ts', 'npm run bench'],
  ['engines.ts', 'npm run bench:engines'],
  ['scale.ts', 'npm run bench:scale'],
  ['sqs.ts', 'npm run bench:sqs'],
  ['worker.ts', 'npm run bench:worker'],
  ['soak.ts', 'npm run soak'],
  ['profile.ts', 'node --import tsx profile.ts'],
] as const;

describe('bench scripts: their command line', () => {
  it.each(SCRIPTS)('%s --help prints its usage and exits 0, running nothing', (script, usage) => {
    const run = bench(script, ['--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`usage: ${usage}`);
    expect(run.stderr).toBe('');
  });

  it.each(SCRIPTS)('%s refuses an unknown option with its usage, exit 2, no stack', (script) => {
    const run = bench(script, ['--runz', '1']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("Unknown option '--runz'");
    expect(run.stderr).toContain('usage:');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses a bad number, an unknown system or workload before anything runs', () => {
    for (const [args, message] of [
      [['--runs', 'x'], '--runs must be a whole number ≥ 1, got "x"'],
      [['--n', '0'], '--n must be a whole number ≥ 1, got "0"'],
      [['--backlogs', '1000,lots'], '--backlogs must be a whole number ≥ 1, got "lots"'],
      [['--only', 'leaseq-sqlit'], 'unknown system "leaseq-sqlit" in --only'],
      [['--phases', 'w2,w9'], 'unknown workload "w2" in --phases'],
    ] as const) {
      const run = bench('compare.ts', [...args]);
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    }
    const worker = bench('worker.ts', ['--concurrency', '1,0']);
    expect(worker.status).toBe(2);
    expect(worker.stderr).toContain('--concurrency must be a whole number ≥ 1, got "0"');
  });
});
