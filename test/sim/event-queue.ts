/** Events of the simulation, run in time order (ties in the order they were scheduled). */
interface SimEvent {
  at: number;
  seq: number;
  run: () => Promise<void>;
}

/** A priority queue of events over simulated time: a binary heap on (at, seq). */
export class EventQueue {
  private readonly heap: SimEvent[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.heap.length;
  }

  schedule(at: number, run: () => Promise<void>): void {
    this.heap.push({ at, seq: this.nextSeq++, run });
    let child = this.heap.length - 1;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if (!this.before(child, parent)) break;
      this.swap(child, parent);
      child = parent;
    }
  }

  /** The earliest event, removed; undefined when none is left. */
  take(): SimEvent | undefined {
    const first = this.heap[0];
    const last = this.heap.pop();
    if (first === undefined || last === undefined || first === last) return first;
    this.heap[0] = last;
    let parent = 0;
    for (;;) {
      const left = 2 * parent + 1;
      const right = left + 1;
      let smallest = parent;
      if (left < this.heap.length && this.before(left, smallest)) smallest = left;
      if (right < this.heap.length && this.before(right, smallest)) smallest = right;
      if (smallest === parent) return first;
      this.swap(parent, smallest);
      parent = smallest;
    }
  }

  private before(a: number, b: number): boolean {
    const x = this.heap[a] as SimEvent;
    const y = this.heap[b] as SimEvent;
    return x.at < y.at || (x.at === y.at && x.seq < y.seq);
  }

  private swap(a: number, b: number): void {
    const x = this.heap[a] as SimEvent;
    this.heap[a] = this.heap[b] as SimEvent;
    this.heap[b] = x;
  }
}
