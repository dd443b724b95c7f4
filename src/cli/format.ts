import type { DeadLetter, QueueStats, ResolvedQueueOptions } from '../core/index.js';

const show = (value: number, unit = '') =>
  value === Number.POSITIVE_INFINITY ? 'unbounded' : `${value}${unit}`;

/** `visibility=30000ms prefetch=unbounded …` */
export function formatOptions(options: ResolvedQueueOptions): string {
  return [
    `visibility=${show(options.visibility, 'ms')}`,
    `prefetch=${show(options.prefetch)}`,
    `maxDeliveries=${show(options.maxDeliveries)}`,
    `maxLease=${show(options.maxLease, 'ms')}`,
    `dedupWindow=${show(options.dedupWindow, 'ms')}`,
    ...(options.deadLetterQueue === undefined
      ? []
      : [`deadLetterQueue=${options.deadLetterQueue}`]),
    ...(options.paused === true ? ['paused'] : []),
    ...(options.retention === undefined ? [] : [`retention=${show(options.retention, 'ms')}`]),
    ...(options.maxLength === undefined ? [] : [`maxLength=${show(options.maxLength)}`]),
    ...(options.overflow === undefined ? [] : [`overflow=${options.overflow}`]),
  ].join(' ');
}

/** One `name: value` line per figure, dead letters by reason indented. */
export function formatStats(stats: QueueStats): string {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(stats)) {
    if (typeof value === 'number') lines.push(`${name.padEnd(16)} ${value}`);
  }
  lines.push(`${'paused'.padEnd(16)} ${stats.paused}`);
  lines.push('deadLetters');
  for (const [reason, count] of Object.entries(stats.deadLetters)) {
    lines.push(`  ${reason.padEnd(14)} ${count}`);
  }
  const { count, sum, max } = stats.processingTime;
  lines.push(
    `processingTime   count ${count}, mean ${count === 0 ? 0 : Math.round(sum / count)}ms, max ${max}ms`,
  );
  return `${lines.join('\n')}\n`;
}

/** A time (ms) as ISO 8601, or as its number where no date holds it. */
export function formatTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} (past the last date)` : date.toISOString();
}

/** A dead letter with its history, one attempt a line. */
export function formatDeadLetter(dead: DeadLetter): string {
  const head = `${dead.id}  reason=${dead.reason} deliveries=${dead.deliveryCount} deadAt=${formatTime(dead.deadAt)}`;
  const attempts = dead.history.map(
    (a) =>
      `  token ${a.token}: ${a.outcome}${a.reason === undefined ? '' : ` (${a.reason})`} after ${a.endedAt - a.deliveredAt}ms`,
  );
  return `${[head, ...attempts].join('\n')}\n`;
}
