/**
 * leaseq/testing: deterministic tools for testing code built on leaseq.
 */
export { ManualClock } from '../broker/clock.js';
