import type { Clock } from '../broker/clock.js';
import { type HeapItem, IndexedHeap } from '../core/heap.js';

/** Something the scheduler wakes at its `wakeAt` (worker clock, ms). */
export interface Scheduled extends HeapItem {
  wakeAt: number;
  wake(): void;
}

/**
 * One timer for every lease a worker keeps: the items wait in a heap ordered by `wakeAt`, and a
 * single clock sleep is armed for the earliest. Adding an item later than the armed time (the
 * common case: every new job's renewal comes after the ones already in hand) costs a heap push,
 * no timer. An item removed early leaves the timer armed; it then fires for nothing and re-arms.
 */
export class WakeScheduler {
  private readonly heap = new IndexedHeap<Scheduled>((a, b) => a.wakeAt < b.wakeAt);
  private armedAt = Number.POSITIVE_INFINITY;
  private timer: AbortController | undefined;
  private firing = false;
  private stopped = false;

  constructor(private readonly clock: Clock) {}

  /** Wakes `item` at `wakeAt`, moving it if it was already scheduled. */
  schedule(item: Scheduled, wakeAt: number): void {
    if (this.stopped) return;
    item.wakeAt = wakeAt;
    if (this.heap.has(item)) this.heap.update(item);
    else this.heap.push(item);
    if (!this.firing && wakeAt < this.armedAt) this.arm(wakeAt);
  }

  /** Takes `item` out; it will not be woken unless scheduled again. */
  cancel(item: Scheduled): void {
    this.heap.remove(item);
  }

  /** How many items wait. */
  get size(): number {
    return this.heap.size;
  }

  /**
   * Cancels the armed timer when nothing waits, so that it does not keep the process alive.
   * Not done on every `cancel`: a worker that keeps jobs coming would re-arm at once.
   */
  disarmIfEmpty(): void {
    if (this.heap.size === 0) this.disarm();
  }

  /** Cancels the timer and forgets every item (the worker closed). */
  stop(): void {
    this.stopped = true;
    for (let item = this.heap.pop(); item !== undefined; item = this.heap.pop());
    this.disarm();
  }

  private arm(at: number): void {
    this.disarm();
    const timer = new AbortController();
    this.timer = timer;
    this.armedAt = at;
    void this.clock.sleep(Math.max(0, at - this.clock.now()), timer.signal).then(() => {
      if (this.timer !== timer) return;
      this.timer = undefined;
      this.armedAt = Number.POSITIVE_INFINITY;
      this.fire();
    });
  }

  private disarm(): void {
    const timer = this.timer;
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    timer?.abort();
  }

  /** Wakes every item that is due, then arms the timer for the next one. */
  private fire(): void {
    if (this.stopped) return;
    const now = this.clock.now();
    const due: Scheduled[] = [];
    for (
      let top = this.heap.peek();
      top !== undefined && top.wakeAt <= now;
      top = this.heap.peek()
    ) {
      this.heap.remove(top);
      due.push(top);
    }
    // Items rescheduled while waking go back in the heap; one timer is armed afterwards.
    this.firing = true;
    try {
      for (const item of due) item.wake();
    } finally {
      this.firing = false;
    }
    const next = this.heap.peek();
    if (next !== undefined && next.wakeAt < this.armedAt) this.arm(next.wakeAt);
  }
}
