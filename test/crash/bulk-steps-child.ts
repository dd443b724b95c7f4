import { openEngine } from '../../src/engine/index.js';

/**
 * Runs one bulk command on a queue of a storage, for bulk-steps-crash.test.ts, which kills it
 * midway: `url command queue now [target]`. Writes `running` before, `done` after.
 */
const [url, command, queue, nowText, target] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string | undefined,
];
// Each turn of the event loop (those between the command's steps among them) is held this long:
// the test sees the command midway, however loaded the machine, without a hook in the engine.
const turnMs = Number(process.env.LEASEQ_TEST_TURN_MS ?? 0);
if (turnMs > 0) {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  setInterval(() => Atomics.wait(cell, 0, 0, turnMs), 0).unref();
}
const engine = await openEngine(url);
const handle = engine.handle(queue);
const now = Number(nowText);
process.stdout.write('running\n');
if (command === 'redrive') await handle.redrive(now);
else await handle.moveJobs(now, target === undefined ? {} : { to: target });
process.stdout.write('done\n');
await engine.close();
