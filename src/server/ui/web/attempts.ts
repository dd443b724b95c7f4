import { MAX_HISTORY } from '../../../core/records.js';
import { formatCount } from './format.js';

/** How a job's timeline names its kept attempts, and what it says of those not kept. */
export interface AttemptLabels {
  /** One per kept attempt, in the history's order. */
  labels: string[];
  /**
   * Said between the first attempt and the next kept one when attempts between them may not
   * have been kept; absent when every attempt is.
   */
  gap?: string;
}

/**
 * The labels of a job's kept attempts (R14: its history keeps at most MAX_HISTORY, the first and
 * the latest MAX_HISTORY − 1). Below the cap every attempt is kept and each is named by its
 * number. At the cap the number of the latest ones is unknown: `deliveryCount` counts only the
 * deliveries since the job was last redriven or moved (then 0), and a job's history reaches the
 * cap mostly by being redriven. So the first is Attempt 1 and the latest are named from the
 * latest back; `deliveryCount` gives a lower bound of those not kept (`live`: a delivery is in
 * flight, counted in it but not yet in the history).
 */
export function attemptLabels(
  history: readonly unknown[],
  deliveryCount: number,
  live: boolean,
): AttemptLabels {
  const kept = history.length;
  if (kept < MAX_HISTORY) return { labels: history.map((_, index) => `Attempt ${index + 1}`) };
  const labels = history.map((_, index) => {
    if (index === 0) return 'Attempt 1';
    const back = kept - 1 - index;
    return back === 0 ? 'Latest attempt' : `${formatCount(back)} before the latest`;
  });
  const ended = deliveryCount - (live ? 1 : 0);
  const latest = MAX_HISTORY - 1;
  const gap =
    ended > MAX_HISTORY
      ? `At least ${formatCount(ended - MAX_HISTORY)} ${ended - MAX_HISTORY === 1 ? 'attempt' : 'attempts'} between the first and the latest ${latest} not kept (a job's history keeps those ${MAX_HISTORY})`
      : `Any attempts between the first and the latest ${latest} are not kept (a job's history keeps those ${MAX_HISTORY})`;
  return { labels, gap };
}
