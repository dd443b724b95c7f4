import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Loaded into the soak's `leaseq serve` child with --import (never part of the package): every
 * LEASEQ_SOAK_PROBE_MS it prints the process's memory as one line on stderr,
 * `soak-probe {"rss":…,"heapUsed":…,"heapLive":…,"heapTotal":…,"external":…}` (bytes).
 * `heapLive` is read after a full collection: `heapUsed` alone swings with when the collector
 * last ran (27–61 MB over one steady run), which hides a slow leak and invents a creep.
 */
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');
const everyMs = Number(process.env.LEASEQ_SOAK_PROBE_MS ?? 5000);
setInterval(() => {
  const { heapUsed } = process.memoryUsage();
  collect();
  const { rss, heapUsed: heapLive, heapTotal, external } = process.memoryUsage();
  process.stderr.write(
    `soak-probe ${JSON.stringify({ rss, heapUsed, heapLive, heapTotal, external })}\n`,
  );
}, everyMs).unref();
