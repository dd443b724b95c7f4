/**
 * leaseq/testing: deterministic tools for testing code built on leaseq — a manual clock, a
 * harness of simulated consumer processes with injectable faults, a fenced resource (R7), a
 * gate to hold handlers, and the in-memory inbox.
 */
export { ManualClock } from '../broker/clock.js';
export { MemoryInbox } from '../worker/inbox.js';
export { silentLogger } from '../worker/logger.js';
export { InjectedFaultError, ProcessCrashedError, type TestingErrorCode } from './errors.js';
export { type FailRenewalsOptions, type FaultyCall, FaultyQueue } from './faulty-queue.js';
export { FencedResource, type FencedWrite } from './fenced-resource.js';
export { Gate } from './gate.js';
export { Harness, type HarnessOptions, TestProcess } from './harness.js';
