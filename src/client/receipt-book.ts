interface Entry {
  receipt: string;
  session: string | undefined;
}

/**
 * The receipts of the deliveries this client received, by fencing token. The Queue interface
 * speaks tokens; the wire speaks receipts. Entries leave when their delivery is settled, when
 * their session ends, or (oldest first) when the book is full.
 */
export class ReceiptBook {
  private readonly entries = new Map<number, Entry>();

  constructor(private readonly capacity: number) {}

  add(token: number, receipt: string, session: string | undefined): void {
    this.entries.set(token, { receipt, session });
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as number;
      this.entries.delete(oldest);
    }
  }

  receipt(token: number): string | undefined {
    return this.entries.get(token)?.receipt;
  }

  forget(token: number): void {
    this.entries.delete(token);
  }

  /** Forgets the session's deliveries with a token ≤ `upTo`. */
  forgetSession(session: string, upTo = Number.POSITIVE_INFINITY): void {
    for (const [token, entry] of this.entries) {
      if (entry.session === session && token <= upTo) this.entries.delete(token);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
