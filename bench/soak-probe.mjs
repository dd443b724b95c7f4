/**
 * Loaded into the soak's `leaseq serve` child with --import (never part of the package): every
 * LEASEQ_SOAK_PROBE_MS it prints the process's memory as one line on stderr,
 * `soak-probe {"rss":…,"heapUsed":…,"heapTotal":…,"external":…}` (bytes).
 */
const everyMs = Number(process.env.LEASEQ_SOAK_PROBE_MS ?? 5000);
setInterval(() => {
  const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
  process.stderr.write(`soak-probe ${JSON.stringify({ rss, heapUsed, heapTotal, external })}\n`);
}, everyMs).unref();
