import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // A worker per core, not Vitest's one fewer: most test files wait on storage, sockets and
    // timers rather than compute. On 2 cores the suite took 356 s with one worker, 245–263 s
    // with two (three runs, all green).
    maxWorkers: availableParallelism(),
    // A worker runs its files in one module graph rather than importing everything again for
    // each: the server, the engines and their drivers took ~1 s of import per file, 125 s of a
    // 316 s run on 2 cores; without isolation the imports took 21 s and the run 206 s. Files keep
    // no state in modules: each makes its own brokers, servers and temporary files, and restores
    // fake timers in afterEach.
    isolate: false,
  },
});
