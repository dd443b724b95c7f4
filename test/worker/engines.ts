import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe } from 'vitest';
import type { QueueOptions } from '../../src/index.js';
import { Harness, type HarnessOptions } from '../../src/testing/index.js';

/** One storage the worker suites run over. */
export interface WorkerEngine {
  readonly name: 'memory' | 'sqlite';
  /** A URL of fresh storage. */
  url(): string;
  /** Why this engine's tests are skipped; undefined when they run. */
  readonly skipReason: string | undefined;
}

/** The queue most tests use: a 1 s lease, three deliveries. */
export const QUEUE: QueueOptions = { visibility: 1000, maxDeliveries: 3 };

/** Memory and SQLite (a fresh file per harness). Call once at the top of a test file. */
export async function workerEngines(): Promise<WorkerEngine[]> {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-worker-'));
  afterAll(() => rm(dir, { recursive: true, force: true }));
  let files = 0;
  const sqliteUrl = () => {
    files += 1;
    return `sqlite:${join(dir, `w${files}.db`)}`;
  };
  return [
    { name: 'memory', url: () => 'memory:', skipReason: undefined },
    { name: 'sqlite', url: sqliteUrl, skipReason: undefined },
  ];
}

/** Opens a harness over `engine` and closes it after the test. */
export function harnessFor(engine: WorkerEngine) {
  const open: Harness[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((harness) => harness.close()));
  });
  return async (options: HarnessOptions = {}): Promise<Harness> => {
    const harness = await Harness.open({ url: engine.url(), queueOptions: QUEUE, ...options });
    open.push(harness);
    return harness;
  };
}

/** Declares `body` once per engine; an engine with a skip reason shows it in the title. */
export function describeEngines(
  engines: readonly WorkerEngine[],
  title: string,
  body: (open: ReturnType<typeof harnessFor>, engine: WorkerEngine) => void,
): void {
  for (const engine of engines) {
    const skipped = engine.skipReason !== undefined;
    const name = `${title} over ${engine.name}${skipped ? ` (skipped: ${engine.skipReason})` : ''}`;
    describe.skipIf(skipped)(name, () => body(harnessFor(engine), engine));
  }
}
