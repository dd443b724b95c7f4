import type { InspectView, QueueStats } from '../../src/core/index.js';
import type { Line } from './protocol.js';

interface Reservation {
  id: string;
  token: number;
  deliveryCount: number;
  round: number;
}

interface Violation {
  message: string;
  /** Ids (or tokens) whose lines are the evidence. */
  about: string[];
}

/** Numbers of one crash run, for the test's summary line. */
export interface CrashCounts {
  rounds: number;
  lines: number;
  publishedReturned: number;
  inFlightPublishesCommitted: number;
  inFlightPublishesNotCommitted: number;
  reservations: number;
  redeliveries: number;
  acksTrue: number;
  acksFalse: number;
  inFlightAcksCommitted: number;
  inFlightAcksNotCommitted: number;
  dead: number;
  /** The first (smallest) token handed out in each round: each above all tokens before (R6). */
  firstTokens: number[];
}

/**
 * The history of a crash run (Jepsen style): what every killed child reported, checked after
 * each restart against what the storage holds.
 *
 * A job is *committed* when its publish returned, when it was seen (delivered or present), or
 * when a publish in flight at the kill turned out committed. Then, at every check:
 * - I1: a committed job is present in exactly one state, or was acked (by an ack that returned
 *   true, or by an ack in flight at the kill that turned out committed);
 * - I2: an acked job never comes back, and no token of it is handed out later;
 * - R5: a batch publish in flight at the kill is there entirely or not at all;
 * - R6/I5: no token is handed out twice, and every token of a round is above every token
 *   reported or stored before the restart;
 * - I7: a job's delivery count grows with its tokens and never goes back;
 * - R8: an ack returns true only for a job's newest delivery, and only once per job.
 * Nothing appears that no one published (Jepsen's *unexpected*).
 */
export class CrashHistory {
  readonly counts: CrashCounts = {
    rounds: 0,
    lines: 0,
    publishedReturned: 0,
    inFlightPublishesCommitted: 0,
    inFlightPublishesNotCommitted: 0,
    reservations: 0,
    redeliveries: 0,
    acksTrue: 0,
    acksFalse: 0,
    inFlightAcksCommitted: 0,
    inFlightAcksNotCommitted: 0,
    dead: 0,
    firstTokens: [],
  };
  /** What happened besides the lines (kill times), shown with any failure. */
  readonly notes: string[] = [];
  private readonly violations: Violation[] = [];
  private readonly log: string[] = [];
  /** Every id a publish was called with. */
  private readonly intended = new Set<string>();
  private readonly committed = new Set<string>();
  /** Ids of publishes in flight at a kill that turned out not committed. */
  private readonly abandoned = new Set<string>();
  private readonly reservations = new Map<string, Reservation[]>();
  private readonly tokens = new Map<number, Reservation>();
  /** Per id, the tokens whose ack returned true. */
  private readonly acked = new Map<string, number[]>();
  /** Ids removed by an ack in flight at a kill (it committed, its answer was lost). */
  private readonly ackedUnreported = new Set<string>();
  private inFlightPublishes: string[][] = [];
  private inFlightAcks = new Map<string, number[]>();
  /** The largest token reported, or stored as active, before the current round. */
  private tokenFloor = 0;
  private roundTokens: number[] = [];

  constructor(
    readonly label: string,
    readonly seed: number,
  ) {}

  /** Takes the complete lines of one round (a child's run until its kill, or the drain). */
  addRound(round: number, lines: readonly Line[], texts: readonly string[]): void {
    for (const text of texts) this.log.push(`r${round} ${text}`);
    this.counts.lines += texts.length;
    const publishing = new Map<string, string[]>();
    const acking = new Map<number, string>();
    this.roundTokens = [];
    for (const line of lines) {
      switch (line.kind) {
        case 'ready':
          break;
        case 'publishing':
          for (const id of line.ids) {
            if (this.intended.has(id)) this.violate(`${id} was published twice by the test`, [id]);
            this.intended.add(id);
          }
          publishing.set(line.ids.join(','), line.ids);
          break;
        case 'published':
          if (!publishing.delete(line.ids.join(','))) {
            this.violate(`a publish returned that was never called: ${line.ids}`, line.ids);
          }
          for (const id of line.ids) this.committed.add(id);
          this.counts.publishedReturned += line.ids.length;
          break;
        case 'reserved':
          this.reserved({ ...line, round });
          break;
        case 'acking':
          acking.set(line.token, line.id);
          break;
        case 'acked':
          acking.delete(line.token);
          if (line.ok) this.ackedTrue(line.id, line.token);
          else this.counts.acksFalse += 1;
          break;
        case 'error':
          this.violate(`the child reported: ${line.message}`, []);
          break;
        default:
          this.violate(`unexpected line in a crash round: ${line.kind}`, []);
      }
    }
    this.inFlightPublishes = [...publishing.values()];
    this.inFlightAcks = new Map();
    for (const [token, id] of acking) {
      this.inFlightAcks.set(id, [...(this.inFlightAcks.get(id) ?? []), token]);
    }
    if (this.roundTokens.length > 0) this.counts.firstTokens.push(Math.min(...this.roundTokens));
  }

  /** Checks what the storage holds after the round just added (read after the restart). */
  checkView(round: number, view: InspectView): void {
    const state = new Map<string, string>();
    const put = (id: string, where: string) => {
      const before = state.get(id);
      if (before !== undefined) this.violate(`${id} is both ${before} and ${where}`, [id]);
      else state.set(id, where);
    };
    for (const id of view.ready) put(id, 'ready');
    for (const { id } of view.delayed) put(id, 'delayed');
    for (const { id } of view.active) put(id, 'active');
    for (const { id } of view.dead) put(id, 'dead');

    const activeTokens = new Set<number>();
    let largestActive = 0;
    for (const active of view.active) {
      if (activeTokens.has(active.token)) {
        this.violate(`token ${active.token} names two active deliveries`, [active.id]);
      }
      activeTokens.add(active.token);
      largestActive = Math.max(largestActive, active.token);
      const reported = this.tokens.get(active.token);
      if (reported !== undefined && reported.id !== active.id) {
        this.violate(
          `token ${active.token} was handed out for ${reported.id} but is stored for ${active.id}`,
          [reported.id, active.id],
        );
      }
      const counts = (this.reservations.get(active.id) ?? []).map((each) => each.deliveryCount);
      const reportedMax = Math.max(0, ...counts);
      if (active.deliveryCount < reportedMax) {
        this.violate(
          `I7: ${active.id} is stored with deliveryCount ${active.deliveryCount} after a delivery reported ${reportedMax}`,
          [active.id],
        );
      }
    }

    for (const id of state.keys()) {
      if (!this.intended.has(id)) this.violate(`unexpected job ${id}: nobody published it`, [id]);
      if (this.abandoned.has(id)) {
        this.violate(`${id} appeared after its publish was found not committed`, [id]);
      }
    }

    // R5: a batch in flight at the kill is there entirely or not at all.
    for (const ids of this.inFlightPublishes) {
      const seen = ids.filter((id) => state.has(id) || this.reservations.has(id));
      if (seen.length === 0) {
        for (const id of ids) this.abandoned.add(id);
        this.counts.inFlightPublishesNotCommitted += 1;
      } else if (seen.length === ids.length) {
        for (const id of ids) this.committed.add(id);
        this.counts.inFlightPublishesCommitted += 1;
      } else {
        this.violate(
          `R5: a publish of ${ids.length} jobs in flight at the kill is only partly there (${seen.length})`,
          ids,
        );
      }
    }
    this.inFlightPublishes = [];

    // I1 and I2: every committed job is present, or acked and gone.
    for (const id of this.committed) {
      const present = state.get(id);
      const acked = this.acked.get(id);
      if (acked !== undefined) {
        if (present !== undefined) {
          this.violate(`I2: ${id} was acked (token ${acked[0]}) but is ${present}`, [id]);
        }
      } else if (this.ackedUnreported.has(id)) {
        if (present !== undefined) {
          this.violate(`I2: ${id} was removed by an ack but is ${present} again`, [id]);
        }
      } else if (present === undefined) {
        // Only an ack of the job's newest delivery can have removed it.
        const newest = Math.max(...(this.reservations.get(id) ?? []).map((each) => each.token));
        if (this.inFlightAcks.get(id)?.includes(newest)) {
          this.ackedUnreported.add(id);
          this.counts.inFlightAcksCommitted += 1;
        } else {
          this.violate(`I1: ${id} is lost: committed, never acked, and absent`, [id]);
        }
      }
    }
    for (const id of this.inFlightAcks.keys()) {
      if (state.has(id)) this.counts.inFlightAcksNotCommitted += 1;
    }
    this.inFlightAcks = new Map();

    this.checkDeliveries();
    this.tokenFloor = Math.max(this.tokenFloor, largestActive, ...this.roundTokens);
    this.counts.rounds = Math.max(this.counts.rounds, round + 1);
  }

  /** After the drain: nothing is left but dead jobs; every job ended exactly once. */
  checkFinal(view: InspectView, stats: QueueStats): void {
    const left = view.ready.length + view.delayed.length + view.active.length;
    if (left > 0) {
      this.violate(`the drain left ${left} jobs`, [
        ...view.ready,
        ...view.delayed.map((each) => each.id),
        ...view.active.map((each) => each.id),
      ]);
    }
    const dead = new Set(view.dead.map((each) => each.id));
    this.counts.dead = dead.size;
    for (const id of this.committed) {
      const acks = this.acked.get(id)?.length ?? 0;
      const unreported = this.ackedUnreported.has(id) ? 1 : 0;
      const deadNow = dead.has(id) ? 1 : 0;
      if (acks + unreported + deadNow !== 1) {
        this.violate(
          `${id} ended with ${acks} reported acks, ${unreported} unreported, dead: ${deadNow === 1}`,
          [id],
        );
      }
    }
    for (const id of dead) {
      if (!this.committed.has(id)) this.violate(`dead job ${id} was never committed`, [id]);
    }
    const gauges = { ready: stats.ready, delayed: stats.delayed, active: stats.active };
    if (gauges.ready + gauges.delayed + gauges.active !== 0 || stats.dead !== dead.size) {
      this.violate(
        `I14: stats say ${JSON.stringify({ ...gauges, dead: stats.dead })}, the rows ${dead.size} dead`,
        [],
      );
    }
  }

  /** Ids of committed jobs. */
  get committedCount(): number {
    return this.committed.size;
  }

  /** Fails with the seed and the lines about each violation. */
  throwIfViolated(): void {
    if (this.violations.length === 0) return;
    const shown = this.violations.slice(0, 8).map((violation) => {
      const evidence = this.evidence(violation.about);
      return `- ${violation.message}${evidence.length > 0 ? `\n    ${evidence.join('\n    ')}` : ''}`;
    });
    throw new Error(
      `${this.label}: ${this.violations.length} violation(s), seed ${this.seed} ` +
        `(LEASEQ_CRASH_SEED=${this.seed} repeats its choices; kill timing varies)\n` +
        `${this.notes.join('; ')}\n${shown.join('\n')}`,
    );
  }

  private reserved(reservation: Reservation): void {
    const { id, token, round } = reservation;
    const known = this.tokens.get(token);
    if (known !== undefined) {
      this.violate(
        `I5: token ${token} handed out twice (${known.id} in r${known.round}, ${id} in r${round})`,
        [known.id, id],
      );
    }
    if (token <= this.tokenFloor) {
      this.violate(
        `R6: token ${token} (${id}) handed out in r${round} is not above ${this.tokenFloor}, the largest token before the restart`,
        [id],
      );
    }
    if (!this.intended.has(id) || this.abandoned.has(id)) {
      this.violate(`unexpected job ${id} delivered`, [id]);
    }
    if (this.acked.has(id) || this.ackedUnreported.has(id)) {
      this.violate(`I2: ${id} delivered again (token ${token}) after it was acked`, [id]);
    }
    this.reservations.set(id, [...(this.reservations.get(id) ?? []), reservation]);
    this.tokens.set(token, reservation);
    this.committed.add(id);
    this.roundTokens.push(token);
    this.counts.reservations += 1;
    if (reservation.deliveryCount > 1) this.counts.redeliveries += 1;
  }

  private ackedTrue(id: string, token: number): void {
    this.counts.acksTrue += 1;
    const reservation = this.tokens.get(token);
    if (reservation?.id !== id) {
      this.violate(`an ack of token ${token} for ${id} returned true, never delivered so`, [id]);
    }
    const acked = [...(this.acked.get(id) ?? []), token];
    this.acked.set(id, acked);
    if (acked.length > 1) this.violate(`R8: ${id} acked twice (tokens ${acked})`, [id]);
    if (this.ackedUnreported.has(id)) {
      this.violate(`R8: ${id} acked (token ${token}) after an earlier ack removed it`, [id]);
    }
  }

  /** I7 and R8 per job: counts grow with tokens; only the newest delivery can be acked. */
  private checkDeliveries(): void {
    for (const [id, list] of this.reservations) {
      const sorted = [...list].sort((a, b) => a.token - b.token);
      for (let i = 1; i < sorted.length; i++) {
        const before = sorted[i - 1] as Reservation;
        const after = sorted[i] as Reservation;
        if (after.deliveryCount <= before.deliveryCount) {
          this.violate(
            `I7: ${id} token ${after.token} has deliveryCount ${after.deliveryCount}, token ${before.token} had ${before.deliveryCount}`,
            [id],
          );
        }
      }
      const newest = sorted.at(-1)?.token;
      for (const token of this.acked.get(id) ?? []) {
        if (token !== newest) {
          this.violate(
            `R8: ${id} acked with token ${token}, but token ${newest} was handed out later`,
            [id],
          );
        }
      }
    }
  }

  violate(message: string, about: string[]): void {
    if (this.violations.some((each) => each.message === message)) return;
    this.violations.push({ message, about });
  }

  private evidence(about: readonly string[]): string[] {
    if (about.length === 0) return [];
    const wanted = new Set(about);
    const lines = this.log.filter((text) => text.split(/[ ,]/).some((word) => wanted.has(word)));
    return lines.length > 30 ? ['…', ...lines.slice(-30)] : lines;
  }
}
