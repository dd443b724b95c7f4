/** One write a FencedResource was asked to make. */
export interface FencedWrite<V> {
  /** The fencing token the write carried. */
  token: number;
  /** The value it asked to write. */
  value: V;
  /** Whether it was made: its token not older than the fence. */
  accepted: boolean;
}

/**
 * A resource guarded by fencing tokens (R7): it remembers the largest token it accepted and
 * refuses writes that carry a smaller one, so a consumer whose lease ran out cannot overwrite
 * the work of the consumer that holds the job now. Equal tokens (the same delivery writing
 * again) are accepted.
 */
export class FencedResource<V> {
  /** Every write asked for, accepted or not, in order. */
  readonly writes: FencedWrite<V>[] = [];
  private largestToken = 0;
  private current: V | undefined;

  /** The value of the last accepted write. */
  get value(): V | undefined {
    return this.current;
  }

  /** The largest token accepted so far (0 before any write). */
  get fence(): number {
    return this.largestToken;
  }

  /** Writes `value` if `token` is not older than the fence. Returns whether it was accepted. */
  write(token: number, value: V): boolean {
    const accepted = token >= this.largestToken;
    this.writes.push({ token, value, accepted });
    if (accepted) {
      this.largestToken = token;
      this.current = value;
    }
    return accepted;
  }
}
