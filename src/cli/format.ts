import type {
  Attempt,
  DeadLetter,
  DeadLetterOrigin,
  JobView,
  QueueStats,
  ResolvedQueueOptions,
} from '../core/index.js';

/**
 * A job id as text output shows it: as it is, or as a JSON string where it holds a control
 * character (a newline would break the line, an escape sequence would act on the terminal).
 * So is other text producers and consumers write: a dead-letter reason (often an error's
 * message, stack lines and all), a group key.
 */
export function shownId(id: string): string {
  return CONTROL.test(id) ? JSON.stringify(id) : id;
}

const CONTROL = /[\p{Cc}\u2028\u2029]/u;

/** `count` and the noun, singular for 1: "1 job", "3 jobs", "0 duplicates". */
export function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

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
  const head = [
    `${shownId(dead.id)}  reason=${shownId(dead.reason)} deliveries=${dead.deliveryCount} deadAt=${formatTime(dead.deadAt)}`,
    ...originFacts(dead.origin),
  ].join(' ');
  return `${[head, ...formatAttempts(dead.history)].join('\n')}\n`;
}

/** A job as it stands: its state and what goes with it, its payload, then its history. */
export function formatJob(job: JobView): string {
  const facts = [
    `state=${job.state}`,
    `deliveries=${job.deliveryCount}`,
    ...(job.priority === undefined ? [] : [`priority=${job.priority}`]),
    ...(job.group === undefined ? [] : [`group=${shownId(job.group)}`]),
    ...(job.availableAt === undefined ? [] : [`availableAt=${formatTime(job.availableAt)}`]),
    ...(job.token === undefined ? [] : [`token=${job.token}`]),
    ...(job.deadline === undefined ? [] : [`deadline=${formatTime(job.deadline)}`]),
    ...(job.reason === undefined ? [] : [`reason=${shownId(job.reason)}`]),
    ...(job.deadAt === undefined ? [] : [`deadAt=${formatTime(job.deadAt)}`]),
    ...(job.expiresAt === undefined ? [] : [`expiresAt=${formatTime(job.expiresAt)}`]),
    ...originFacts(job.origin),
  ];
  const payload = job.payload === undefined ? [] : [`  payload ${JSON.stringify(job.payload)}`];
  return `${[`${shownId(job.id)}  ${facts.join(' ')}`, ...payload, ...formatAttempts(job.history)].join('\n')}\n`;
}

/**
 * R26: where, why and when a job that came by dead-lettering died, as its JSON has it: its
 * history alone may not say why (a lease that ran out, a requeue on its last delivery).
 */
function originFacts(origin: DeadLetterOrigin | undefined): string[] {
  if (origin === undefined) return [];
  return [
    `from=${origin.queue}`,
    `originReason=${shownId(origin.reason)}`,
    `originAt=${formatTime(origin.at)}`,
  ];
}

/** One line an attempt: its token, how it ended and after how long, and what went wrong. */
function formatAttempts(history: readonly Attempt[]): string[] {
  return history.map(
    (a) =>
      `  token ${a.token}: ${a.outcome}${a.reason === undefined ? '' : ` (${shownId(a.reason)})`} after ${a.endedAt - a.deliveredAt}ms${a.error === undefined ? '' : `: ${JSON.stringify(a.error)}`}`,
  );
}
