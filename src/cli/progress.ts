import type { Output } from './command.js';

const WIDTH = 30;
const REDRAW_MS = 100;

/**
 * A one-line progress bar on standard error, redrawn at most every 100 ms. With an unknown
 * total it shows only the count. Draws nothing when disabled (not a terminal).
 */
export class ProgressBar {
  private lastDraw = Number.NEGATIVE_INFINITY;
  private drawn = false;

  constructor(
    private readonly out: Output,
    private readonly label: string,
    private readonly enabled: boolean,
    /**
     * Ms on a clock that never steps: on the wall clock, a step back stopped the redraws for
     * its size (the bar stood still for an hour).
     */
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** `done` of `total` units (bytes, jobs), and what to say about it (`1,234 jobs`). */
  update(done: number, total: number | undefined, note: string): void {
    if (!this.enabled) return;
    const now = this.clock();
    if (now - this.lastDraw < REDRAW_MS && done !== total) return;
    this.lastDraw = now;
    this.drawn = true;
    this.out.write(`\r${render(this.label, done, total, note)}`);
  }

  /** Ends the line the bar was drawn on. */
  finish(): void {
    if (this.drawn) this.out.write('\n');
    this.drawn = false;
  }
}

export function render(label: string, done: number, total: number | undefined, note: string) {
  if (total === undefined || total <= 0) return `${label} ${note}`;
  const fraction = Math.min(1, done / total);
  const filled = Math.round(fraction * WIDTH);
  const percent = String(Math.floor(fraction * 100)).padStart(3);
  return `${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${percent}% ${note}`;
}
