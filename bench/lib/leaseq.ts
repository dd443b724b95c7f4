/**
 * leaseq as users get it: the built package, typed by its sources. The benchmark measures the
 * compiled JavaScript, not a transpile-on-load copy. compare.ts runs its children on a copy of
 * ../dist taken at its start (LEASEQ_BENCH_DIST), so that a rebuild in the work tree during a
 * run does not change the code under test halfway; run alone, this loads ../dist.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Leaseq from '../../src/index.js';

const snapshot = process.env.LEASEQ_BENCH_DIST;
const entry =
  snapshot === undefined
    ? new URL('../../dist/index.js', import.meta.url)
    : pathToFileURL(join(snapshot, 'index.js'));

export const leaseq: typeof Leaseq = await import(entry.href);
export type { Broker, Delivery, Queue } from '../../src/index.js';
