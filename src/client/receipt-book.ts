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
  /**
   * The tokens of `open` received in each session, by the session as the caller names it: an
   * ackUpTo, nackUpTo or the session's end settles them without naming each (R11, R16).
   */
  private readonly bySession = new Map<string, Set<number>>();
  /** The session each token of `open` was received in, when it was. */
  private readonly sessionOf = new Map<number, string>();

  constructor(private readonly capacity: number) {}

  /**
   * Keeps the receipt of a delivery just received (in `session`, when given); a full book lets
   * one receipt go.
   */
  add(token: number, receipt: string, session?: string): void {
    this.settled.delete(token);
    this.unlink(token);
    this.open.set(token, receipt);
    if (session !== undefined) {
      this.sessionOf.set(token, session);
      const tokens = this.bySession.get(session);
      if (tokens === undefined) this.bySession.set(session, new Set([token]));
      else tokens.add(token);
    }
    if (this.size > this.capacity) {
      const from = this.settled.size > 0 ? this.settled : this.open;
      const oldest = from.keys().next().value as number;
      from.delete(oldest);
      this.unlink(oldest);
    }
  }

  /** The delivery of `token` has ended: its receipt is among the first to leave a full book. */
  settle(token: number): void {
    const receipt = this.open.get(token);
    if (receipt === undefined) return;
    this.open.delete(token);
    this.unlink(token);
    this.settled.set(token, receipt);
  }

  /** The deliveries of `session` with a token ≤ `token` have ended (R11). */
  settleUpTo(session: string, token: number): void {
    const tokens = this.bySession.get(session);
    if (tokens === undefined) return;
    for (const each of [...tokens]) if (each <= token) this.settle(each);
  }

  /** The session has ended: so have all its deliveries (R16). */
  settleSession(session: string): void {
    this.settleUpTo(session, Number.POSITIVE_INFINITY);
  }

  /** The receipt of `token`'s delivery; undefined when it was never added or has left. */
  receipt(token: number): string | undefined {
    return this.open.get(token) ?? this.settled.get(token);
  }

  /** How many receipts the book holds; at most its capacity. */
  get size(): number {
    return this.open.size + this.settled.size;
  }

  /** Forgets the session of `token`, if it has one. */
  private unlink(token: number): void {
    const session = this.sessionOf.get(token);
    if (session === undefined) return;
    this.sessionOf.delete(token);
    const tokens = this.bySession.get(session);
    tokens?.delete(token);
    if (tokens?.size === 0) this.bySession.delete(session);
  }
}
