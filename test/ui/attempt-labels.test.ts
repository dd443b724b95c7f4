import { describe, expect, it } from 'vitest';
import { MAX_HISTORY } from '../../src/core/records.js';
import { attemptLabels } from '../../src/server/ui/web/attempts.js';

/** A history of `length` kept attempts (only their number matters to the labels). */
const kept = (length: number) => Array.from({ length }, (_, token) => ({ token }));

describe('the labels of the attempts of a job', () => {
  it('names each attempt by its number while every attempt is kept', () => {
    expect(attemptLabels(kept(3), 3, false)).toEqual({
      labels: ['Attempt 1', 'Attempt 2', 'Attempt 3'],
    });
    const below = attemptLabels(kept(MAX_HISTORY - 1), MAX_HISTORY, true);
    expect(below.gap).toBeUndefined();
    expect(below.labels.at(-1)).toBe(`Attempt ${MAX_HISTORY - 1}`);
  });

  it('names the latest kept attempts from the latest back once the history is at its cap', () => {
    // 197 attempts: the first and the latest 99 (attempts 99 to 197) kept.
    const { labels, gap } = attemptLabels(kept(MAX_HISTORY), 197, false);
    expect(labels).toHaveLength(MAX_HISTORY);
    expect(labels[0]).toBe('Attempt 1');
    expect(labels[1]).toBe('98 before the latest');
    expect(labels[MAX_HISTORY - 2]).toBe('1 before the latest');
    expect(labels[MAX_HISTORY - 1]).toBe('Latest attempt');
    expect(labels.slice(1).some((label) => label.startsWith('Attempt'))).toBe(false);
    expect(gap).toMatch(/^At least 97 attempts between the first and the latest 99 not kept/);
  });

  it('leaves a delivery in flight out of the attempts not kept', () => {
    expect(attemptLabels(kept(MAX_HISTORY), 102, true).gap).toMatch(/^At least 1 attempt /);
  });

  it('claims no count of those not kept that the delivery count cannot bound', () => {
    // A job redriven (deliveryCount back to 0) or with exactly 100 attempts: how many went is
    // not known, none perhaps.
    for (const deliveryCount of [3, MAX_HISTORY]) {
      const { labels, gap } = attemptLabels(kept(MAX_HISTORY), deliveryCount, false);
      expect(gap).toMatch(/^Any attempts between the first and the latest 99 are not kept/);
      expect(labels[1]).toBe('98 before the latest');
    }
  });
});
