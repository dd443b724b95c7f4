import type { Operation } from '../../core/index.js';
import type { CommitKind } from './sql-connection.js';

/**
 * Operations whose only lasting effect is on leases, sessions' heartbeats and time (R21): a
 * power loss that discards them leaves a state the queue could have reached by leases running
 * out. Every other operation (and any added later) commits durably.
 */
const LEASE_ONLY: ReadonlySet<Operation['type']> = new Set([
  'reserve',
  'extend',
  'heartbeat',
  'stats',
]);

/** What the commit of a batch of `operations` must wait for. */
export function commitKindOf(operations: readonly Operation[]): CommitKind {
  return operations.every((operation) => LEASE_ONLY.has(operation.type)) ? 'lease' : 'durable';
}
