import { afterEach, describe, expect, it, vi } from 'vitest';
import { ProgressBar } from '../../src/cli/progress.js';

// The progress bar is redrawn at most every 100 ms. Measured on the wall clock, a step back of
// an hour during a long publish or redrive left it standing still for that hour.

const HOUR = 3_600_000;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the progress bar', () => {
  it('is redrawn every 100 ms though the wall clock stepped back an hour', () => {
    const written: string[] = [];
    const out = { write: (text: string) => written.push(text), isTTY: true };
    const wall = Date.now.bind(Date);
    let stepped = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => wall() - stepped);
    let monotonic = 1_000;
    const bar = new ProgressBar(out, 'publishing', true, () => monotonic);
    bar.update(1, 10, '1 job');
    stepped = HOUR;
    monotonic += 150;
    bar.update(2, 10, '2 jobs');
    monotonic += 150;
    bar.update(3, 10, '3 jobs');
    expect(written.length).toBe(3);
    expect(written.at(-1)).toContain('3 jobs');
  });

  it('is redrawn at most every 100 ms, and always at the end', () => {
    const written: string[] = [];
    const out = { write: (text: string) => written.push(text), isTTY: true };
    let monotonic = 1_000;
    const bar = new ProgressBar(out, 'publishing', true, () => monotonic);
    bar.update(1, 3, '1 job');
    monotonic += 50;
    bar.update(2, 3, '2 jobs');
    bar.update(3, 3, '3 jobs');
    expect(written.length).toBe(2);
    expect(written.at(-1)).toContain('3 jobs');
  });
});
