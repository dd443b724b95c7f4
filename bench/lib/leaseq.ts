/**
 * leaseq as users get it: the built package (`npm run build` at the root makes ../dist), typed
 * by its sources. The benchmark measures the compiled JavaScript, not a transpile-on-load copy.
 */
import type * as Leaseq from '../../src/index.js';

const entry = new URL('../../dist/index.js', import.meta.url);

export const leaseq: typeof Leaseq = await import(entry.href);
export type { Broker, Delivery, Queue } from '../../src/index.js';
