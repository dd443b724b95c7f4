/**
 * leaseq: a job queue built on visibility leases.
 *
 * The pure core (`LeaseQueue`) implements SPEC.md with time as an explicit integer argument.
 */
export * from './core/index.js';
