/**
 * Child of sqlite-temp-files.test.ts: a big reserve and ack on a SQLite file, in a process
 * whose SQLite puts any temporary file in SQLITE_TMPDIR (read once, when SQLite starts).
 */
import { openSqliteEngine } from '../../src/engine/sqlite/sqlite-engine.js';

const [path, jobs] = process.argv.slice(2) as [string, string];
const engine = await openSqliteEngine(path);
try {
  const queue = await engine.queue('big');
  let now = 1;
  const count = Number(jobs);
  for (let start = 0; start < count; start += 500) {
    const batch = Array.from({ length: Math.min(500, count - start) }, (_, index) => ({
      payload: { n: start + index, pad: 'x'.repeat(200) },
    }));
    await queue.publishBatch(now++, batch);
  }
  const deliveries = await queue.reserve(now++, { max: count });
  const acked = (
    await queue.ackMany(
      now++,
      deliveries.map((delivery) => delivery.token),
    )
  ).filter(Boolean).length;
  process.stdout.write(`${JSON.stringify({ reserved: deliveries.length, acked })}\n`);
} finally {
  await engine.close();
}
