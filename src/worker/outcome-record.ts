import type { Delivery } from '../core/index.js';
import type { OutcomeRecord } from './job.js';
import { isLevelEnabled, type Logger, type LogLevel } from './logger.js';
import type { Decision, OutcomeKind } from './outcome.js';

/** How a delivery ended, before it becomes an OutcomeRecord. */
export type Settlement = Omit<
  OutcomeRecord,
  'queue' | 'id' | 'token' | 'deliveryCount' | 'durationMs'
>;

/** The settlements of the common path, shared by every job. */
export const ACKED: Settlement = Object.freeze({ outcome: 'acked' });
export const DUPLICATE: Settlement = Object.freeze({ outcome: 'duplicate' });

export function settlementOf(decision: Decision): Settlement {
  const settlement: Settlement = { outcome: decision.kind };
  if (decision.reason !== undefined) settlement.reason = decision.reason;
  if (decision.action !== 'ack') settlement.error = decision.error;
  if (decision.action === 'retry') settlement.delay = decision.delay;
  return settlement;
}

export function withoutDelay(settlement: Settlement): Settlement {
  const { delay: _delay, ...rest } = settlement;
  return rest;
}

/** The record of a final outcome, its fields in the order of the log line. */
export function outcomeRecord(
  queue: string,
  delivery: Delivery,
  settlement: Settlement,
  durationMs: number,
): OutcomeRecord {
  const { id, token, deliveryCount } = delivery;
  const record = { queue, id, token, deliveryCount, outcome: settlement.outcome } as OutcomeRecord;
  if (settlement.reason !== undefined) record.reason = settlement.reason;
  if (settlement.error !== undefined) record.error = settlement.error;
  if (settlement.delay !== undefined) record.delay = settlement.delay;
  record.durationMs = durationMs;
  return record;
}

const LOG_LEVEL: Record<OutcomeKind, LogLevel> = {
  acked: 'info',
  duplicate: 'info',
  retried: 'warn',
  released: 'warn',
  'lease-lost': 'warn',
  dead: 'error',
  ambiguous: 'error',
  lost: 'error',
};

const MESSAGE: Record<OutcomeKind, string> = {
  acked: 'job acked',
  duplicate: 'job duplicate',
  retried: 'job retried',
  released: 'job released',
  'lease-lost': 'job lease-lost',
  dead: 'job dead',
  ambiguous: 'job ambiguous',
  lost: 'job lost',
};

/**
 * The log line of a final outcome: info for acked and duplicate, warn for retried, released and
 * lease-lost, error for dead, ambiguous and lost. Nothing is built when the logger says its level is
 * off; a failing logger never leaves a job unsettled.
 */
export function logOutcome(logger: Logger, record: OutcomeRecord, lastProgress: unknown): void {
  const level = LOG_LEVEL[record.outcome];
  try {
    if (!isLevelEnabled(logger, level)) return;
    const fields: Record<string, unknown> = { ...record };
    if (record.outcome === 'lease-lost' && lastProgress !== undefined) {
      fields.progress = lastProgress;
    }
    logger[level](fields, MESSAGE[record.outcome]);
  } catch {
    // A failing logger must not leave a job unsettled.
  }
}
