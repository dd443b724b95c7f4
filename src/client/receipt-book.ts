/**
 * The receipts of the deliveries this client received, by fencing token. The Queue interface
 * speaks tokens; the wire speaks receipts. Entries stay after their delivery is settled or its
 * session ends, so a late call is answered stale by the server (R8); they leave only when the
 * book is full: first those of deliveries settled through this client, oldest first, and only
 * then, when none is left, the oldest of the others. A delivery still in hand (a long job
 * whose lease is being renewed) thus keeps its receipt however many others pass meanwhile.
 */
export class ReceiptBook {
  /** Receipts of deliveries not known to be settled, oldest first. */
  private readonly open = new Map<number, string>();
  /** Receipts of deliveries whose ack or nack answered (or whose extend found them gone). */
  private readonly settled = new Map<number, string>();

  constructor(private readonly capacity: number) {}

  /** Keeps the receipt of a delivery just received; a full book lets one receipt go. */
  add(token: number, receipt: string): void {
    this.settled.delete(token);
    this.open.set(token, receipt);
    if (this.size > this.capacity) {
      const from = this.settled.size > 0 ? this.settled : this.open;
      const oldest = from.keys().next().value as number;
      from.delete(oldest);
    }
  }

  /** The delivery of `token` has ended: its receipt is among the first to leave a full book. */
  settle(token: number): void {
    const receipt = this.open.get(token);
    if (receipt === undefined) return;
    this.open.delete(token);
    this.settled.set(token, receipt);
  }

  /** The receipt of `token`'s delivery; undefined when it was never added or has left. */
  receipt(token: number): string | undefined {
    return this.open.get(token) ?? this.settled.get(token);
  }

  /** How many receipts the book holds; at most its capacity. */
  get size(): number {
    return this.open.size + this.settled.size;
  }
}
