/**
 * The receipts of the deliveries this client received, by fencing token. The Queue interface
 * speaks tokens; the wire speaks receipts. Entries stay after their delivery is settled or its
 * session ends, so a late call is answered stale by the server (R8); they leave only when the
 * book is full, oldest first.
 */
export class ReceiptBook {
  private readonly entries = new Map<number, string>();

  constructor(private readonly capacity: number) {}

  add(token: number, receipt: string): void {
    this.entries.set(token, receipt);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as number;
      this.entries.delete(oldest);
    }
  }

  receipt(token: number): string | undefined {
    return this.entries.get(token);
  }

  get size(): number {
    return this.entries.size;
  }
}
