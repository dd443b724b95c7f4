import type {
  DeliveryRecord,
  ExtendOp,
  FinalState,
  Op,
  PublishOp,
  ReceiveOp,
  SettleOp,
  StorageCrashOp,
} from './history.js';

/** The checkers, in the order reports show them. */
export const CHECKERS = [
  'lost',
  'redelivered-after-ack',
  'lease-overlap',
  'token-twice',
  'payload-changed',
  'end-state',
] as const;

export type CheckerName = (typeof CHECKERS)[number];

/** What each checker means; docs/reliability.md prints this. */
export const CHECKER_MEANINGS: Record<CheckerName, { examines: string; fails: string }> = {
  lost: {
    examines: 'jobs whose publish returned',
    fails:
      'a job whose publish returned was never delivered, is not dead, and is not in the storage',
  },
  'redelivered-after-ack': {
    examines: 'acks that answered `acked: true`',
    fails:
      'after an ack answered true, the job was delivered again: with a larger token, or by a receive called after the ack answered (also catches a stale token that completed a newer delivery)',
  },
  'lease-overlap': {
    examines: 'deliveries',
    fails:
      "two deliveries of one job were live at once on the server's clock: the later one was granted before the earlier one's deadline (as last extended), the earlier one had not been nacked or rejected first, and no storage crash can have lost the earlier one (R21: granted less than 1 s before a crash of the storage began, the later one granted after it began)",
  },
  'token-twice': {
    examines: 'deliveries',
    fails: 'one token was handed out for two deliveries (also across restarts)',
  },
  'payload-changed': {
    examines: 'deliveries',
    fails: 'a delivery carried a payload other than the one published under its id',
  },
  'end-state': {
    examines: 'jobs seen (published, delivered or stored)',
    fails:
      'after the drain a job is not exactly one of: acked once (an ack answered true, or one whose answer was lost removed it), or dead with a reason; or a job nobody published appeared; or the drain left jobs behind',
  },
};

export interface CheckResult {
  checker: CheckerName;
  /** How many things (see CHECKER_MEANINGS.examines) it looked at. */
  examined: number;
  violations: string[];
  /** What would have been a violation but for a fault the contract allows for (R21). */
  excused?: string[];
}

/** Runs every checker over one history and the state after its final drain. */
export function checkHistory(ops: readonly Op[], final: FinalState): CheckResult[] {
  const index = new HistoryIndex(ops);
  return [
    lost(index, final),
    redeliveredAfterAck(index),
    leaseOverlap(index),
    tokenTwice(index),
    payloadChanged(index),
    endState(index, final),
  ];
}

/** The violations of every checker, one line each, prefixed by the checker's name. */
export function violationsOf(results: readonly CheckResult[]): string[] {
  return results.flatMap((result) => result.violations.map((text) => `${result.checker}: ${text}`));
}

/**
 * How long before a storage crash a commit that did not wait for a flush may still be lost:
 * PostgreSQL's WAL writer flushes asynchronous commits within three times `wal_writer_delay`
 * (200 ms by default); the rest is margin for a busy machine.
 */
export const LOST_COMMIT_WINDOW_MS = 1000;

interface Delivered extends DeliveryRecord {
  receive: ReceiveOp;
}

/** The lookups the checkers share, built once per history. */
class HistoryIndex {
  /** Every id any publish was called with, and its payload's hash. */
  readonly intended = new Map<string, string>();
  /** Ids some publish of which answered. */
  readonly published = new Set<string>();
  readonly deliveries: Delivered[] = [];
  readonly deliveriesById = new Map<string, Delivered[]>();
  readonly settles: SettleOp[] = [];
  /** Nacks and rejects by token: the calls that may have ended a delivery early. */
  readonly releases = new Map<number, SettleOp[]>();
  readonly extends = new Map<number, ExtendOp[]>();
  /** Sessions a caller learned had ended. */
  readonly endedSessions = new Set<string>();
  readonly crashes: StorageCrashOp[] = [];

  constructor(ops: readonly Op[]) {
    for (const op of ops) {
      switch (op.f) {
        case 'publish':
          this.addPublish(op);
          break;
        case 'receive':
          if (op.outcome !== 'ok') break;
          for (const delivery of op.deliveries) {
            const delivered = { ...delivery, receive: op };
            this.deliveries.push(delivered);
            push(this.deliveriesById, delivery.id, delivered);
          }
          break;
        case 'ack':
        case 'nack':
        case 'reject':
          this.settles.push(op);
          if (op.f !== 'ack') push(this.releases, op.token, op);
          break;
        case 'extend':
          push(this.extends, op.token, op);
          break;
        case 'session-end':
          this.endedSessions.add(op.session);
          break;
        case 'storage-crash':
          this.crashes.push(op);
          break;
        case 'redrive':
          break;
      }
    }
    for (const list of this.deliveriesById.values()) list.sort((a, b) => a.token - b.token);
  }

  private addPublish(op: PublishOp): void {
    op.ids.forEach((id, at) => {
      this.intended.set(id, op.payloadHashes[at] as string);
      if (op.outcome === 'ok') this.published.add(id);
    });
  }

  appliedAcks(): SettleOp[] {
    return this.settles.filter((op) => op.f === 'ack' && op.outcome === 'ok' && op.applied);
  }

  /** The latest deadline the server gave a delivery: its own, or a later extension's. */
  deadlineOf(delivery: Delivered): number {
    let deadline = delivery.deadline;
    for (const op of this.extends.get(delivery.token) ?? []) {
      if (op.outcome === 'ok' && typeof op.deadline === 'number' && op.deadline > deadline) {
        deadline = op.deadline;
      }
    }
    return deadline;
  }

  /**
   * Whether a storage crash may have lost `earlier`'s reservation before `later` was granted
   * (R21): `earlier` granted within LOST_COMMIT_WINDOW_MS before the crash began (or during it),
   * `later` granted after it began. Server time: the fault runs on the server's machine.
   */
  lostToCrash(earlier: DeliveryRecord, later: DeliveryRecord): boolean {
    return this.crashes.some(
      (crash) =>
        earlier.issuedAt > crash.from - LOST_COMMIT_WINDOW_MS &&
        earlier.issuedAt <= crash.to &&
        later.issuedAt >= crash.from,
    );
  }

  /** A nack or reject of `token` that may have ended it, called before `by` (recorder time). */
  releasedBefore(token: number, by: number): boolean {
    return (this.releases.get(token) ?? []).some(
      (op) =>
        (op.outcome === 'unknown' || (op.outcome === 'ok' && op.applied === true)) &&
        op.invokedAt <= by,
    );
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function lost(index: HistoryIndex, final: FinalState): CheckResult {
  const dead = new Set(final.dead.map((each) => each.id));
  const left = new Set(final.left);
  const violations: string[] = [];
  for (const id of index.published) {
    if (!index.deliveriesById.has(id) && !dead.has(id) && !left.has(id)) {
      violations.push(`${id}: its publish returned, but it was never delivered and is not dead`);
    }
  }
  return { checker: 'lost', examined: index.published.size, violations };
}

function redeliveredAfterAck(index: HistoryIndex): CheckResult {
  const acks = index.appliedAcks();
  const violations: string[] = [];
  for (const ack of acks) {
    for (const delivery of index.deliveriesById.get(ack.id) ?? []) {
      if (delivery.token > ack.token) {
        violations.push(
          `${ack.id}: acked with token ${ack.token} (answered true), yet token ${delivery.token} was handed out for it`,
        );
      } else if (delivery.receive.invokedAt > ack.completedAt) {
        violations.push(
          `${ack.id}: acked with token ${ack.token} by ${ack.completedAt}, delivered again (token ${delivery.token}) by a receive called at ${delivery.receive.invokedAt}`,
        );
      }
    }
  }
  return { checker: 'redelivered-after-ack', examined: acks.length, violations };
}

function leaseOverlap(index: HistoryIndex): CheckResult {
  const violations: string[] = [];
  const excused: string[] = [];
  for (const [id, list] of index.deliveriesById) {
    for (let i = 0; i < list.length; i++) {
      const earlier = list[i] as Delivered;
      // Ended with its session at a time the callers cannot know: only its deadline is sure.
      if (earlier.session !== undefined && index.endedSessions.has(earlier.session)) continue;
      const deadline = index.deadlineOf(earlier);
      for (let j = i + 1; j < list.length; j++) {
        const later = list[j] as Delivered;
        if (later.issuedAt >= deadline) continue;
        if (index.releasedBefore(earlier.token, later.receive.completedAt)) continue;
        if (index.lostToCrash(earlier, later)) {
          excused.push(
            `${id}: token ${later.token} granted at ${later.issuedAt}, token ${earlier.token} (granted at ${earlier.issuedAt}) lost to a storage crash`,
          );
          continue;
        }
        violations.push(
          `${id}: token ${later.token} granted at ${later.issuedAt} while token ${earlier.token} was live until ${deadline} (server clock)`,
        );
      }
    }
  }
  return { checker: 'lease-overlap', examined: index.deliveries.length, violations, excused };
}

function tokenTwice(index: HistoryIndex): CheckResult {
  const byToken = new Map<number, Delivered>();
  const violations: string[] = [];
  for (const delivery of index.deliveries) {
    const before = byToken.get(delivery.token);
    if (before !== undefined) {
      violations.push(
        `token ${delivery.token} handed out for ${before.id} (delivery ${before.deliveryCount}) and again for ${delivery.id} (delivery ${delivery.deliveryCount})`,
      );
    } else {
      byToken.set(delivery.token, delivery);
    }
  }
  return { checker: 'token-twice', examined: index.deliveries.length, violations };
}

function payloadChanged(index: HistoryIndex): CheckResult {
  const violations: string[] = [];
  for (const delivery of index.deliveries) {
    const expected = index.intended.get(delivery.id);
    if (expected !== undefined && expected !== delivery.payloadHash) {
      violations.push(
        `${delivery.id} (token ${delivery.token}): payload hash ${delivery.payloadHash}, published ${expected}`,
      );
    }
  }
  return { checker: 'payload-changed', examined: index.deliveries.length, violations };
}

function endState(index: HistoryIndex, final: FinalState): CheckResult {
  const dead = new Map(final.dead.map((each) => [each.id, each.reason]));
  const left = new Set(final.left);
  const seen = new Set([
    ...index.published,
    ...index.deliveriesById.keys(),
    ...dead.keys(),
    ...left,
  ]);
  const applied = new Map<string, number>();
  for (const ack of index.appliedAcks()) applied.set(ack.id, (applied.get(ack.id) ?? 0) + 1);
  const ackUnknown = new Set(
    index.settles.filter((op) => op.f === 'ack' && op.outcome === 'unknown').map((op) => op.id),
  );
  const violations: string[] = [];
  for (const id of seen) {
    if (!index.intended.has(id)) {
      violations.push(`${id}: delivered or stored, but nobody published it`);
      continue;
    }
    if (left.has(id)) violations.push(`${id}: still ready, delayed or active after the drain`);
    const acks = applied.get(id) ?? 0;
    const reason = dead.get(id);
    if (acks > 1) violations.push(`${id}: acked ${acks} times (each answered true)`);
    if (acks > 0 && reason !== undefined) violations.push(`${id}: acked, and dead (${reason})`);
    if (reason === '') violations.push(`${id}: dead without a reason`);
    const removedUnseen = acks === 0 && reason === undefined && !left.has(id);
    // Never delivered: `lost` reports it. An ack whose answer was lost may have removed it.
    if (removedUnseen && index.deliveriesById.has(id) && !ackUnknown.has(id)) {
      violations.push(`${id}: gone from the storage, but no ack answered true and none was lost`);
    }
  }
  return { checker: 'end-state', examined: seen.size, violations };
}
