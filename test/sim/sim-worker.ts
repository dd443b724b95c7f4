import type { Delivery } from '../../src/core/index.js';
import type {
  DeliveryRecord,
  ExtendOp,
  ReceiveOp,
  SessionEndOp,
  SettleOp,
} from '../history/history.js';
import { payloadHash, type Uncompleted } from '../history/history.js';
import type { SimWorld } from './sim-world.js';

/** A delivery a worker holds, with what it knows of its lease. */
interface Held {
  delivery: DeliveryRecord;
  /** The deadline as last answered. */
  deadline: number;
  /** The latest deadline the lease may have (an extension whose answer was lost counts). */
  latestPossibleDeadline: number;
  /** BUGGIFY: acts exactly at (or a tick before) the deadline, without renewing. */
  exactTick: boolean;
}

interface SimSession {
  id: string;
  timeout: number;
  ackTimeout?: number;
  lastHeartbeat: number;
}

const CAPACITY = 3;

/**
 * A simulated consumer: receives (maybe under a session), works on each delivery for a while
 * (sometimes longer than its lease), renews leases, then acks, nacks, rejects or lets go. It
 * crashes and restarts, pauses (missing heartbeats), and sees the network drop its requests.
 */
export class SimWorker {
  private generation = 0;
  private crashed = false;
  private pausedUntil = 0;
  private session: SimSession | undefined;
  private readonly held = new Map<number, Held>();

  constructor(
    private readonly world: SimWorld,
    readonly name: string,
    private readonly usesSession: boolean,
  ) {}

  start(): void {
    this.crashed = false;
    this.later(0, () => this.poll());
    if (this.usesSession) this.later(0, () => this.openSession());
  }

  /** At the end: learns whether its session ended, so the history says so. */
  async settleSession(): Promise<void> {
    if (this.session === undefined) return;
    try {
      await this.world.handle.heartbeat(this.world.now, this.session.id);
    } catch {
      this.sessionEnded();
    }
  }

  /** Schedules `run` unless the worker crashed (a new generation) in between. */
  private later(delayMs: number, run: () => Promise<void>): void {
    const generation = this.generation;
    this.world.after(delayMs, async () => {
      if (generation !== this.generation || this.crashed) return;
      const paused = this.pausedUntil - this.world.now;
      if (paused > 0) return this.later(paused, run);
      await run();
    });
  }

  private get visibility(): number {
    return this.world.swarm.visibilityMs;
  }

  private async openSession(): Promise<void> {
    const { world } = this;
    const timeout = world.between(this.visibility, 3 * this.visibility);
    const ackTimeout = world.swarm.ackTimeouts
      ? world.between(Math.ceil(this.visibility / 2), this.visibility - 1)
      : undefined;
    const options = { timeout, prefetch: CAPACITY, ...(ackTimeout ? { ackTimeout } : {}) };
    try {
      const id = await world.handle.openSession(world.now, options);
      this.session = {
        id,
        timeout,
        ...(ackTimeout ? { ackTimeout } : {}),
        lastHeartbeat: world.now,
      };
      this.later(timeout / 3, () => this.heartbeat(id));
    } catch (error) {
      world.violate(`${this.name}: openSession failed: ${String(error)}`);
    }
  }

  private async heartbeat(id: string): Promise<void> {
    const session = this.session;
    if (session?.id !== id) return;
    const { world } = this;
    if (world.faultsOn && world.chance(world.swarm.droppedRate)) {
      this.later(session.timeout / 3, () => this.heartbeat(id)); // lost on the way
      return;
    }
    try {
      await world.handle.heartbeat(world.now, id);
      session.lastHeartbeat = world.now;
      this.later(session.timeout / 3, () => this.heartbeat(id));
    } catch {
      this.sessionEnded();
    }
  }

  private async poll(): Promise<void> {
    const { world } = this;
    if (this.usesSession && this.session === undefined) return this.later(5, () => this.poll());
    if (this.held.size >= CAPACITY) return this.later(world.between(1, 10), () => this.poll());
    if (world.faultsOn && world.chance(world.swarm.slowRate / 4)) {
      // Paused (a GC pause, SIGSTOP): no heartbeats, no work, for a while.
      this.pausedUntil =
        world.now + world.between(Math.ceil(this.visibility / 2), 3 * this.visibility);
    }
    const session = this.session?.id;
    const max = world.between(1, CAPACITY - this.held.size);
    const answer = await world.send<ReceiveOp, Delivery[]>(
      this.name,
      { f: 'receive', deliveries: [] },
      (now) =>
        world.handle.reserve(now, {
          max,
          visibility: this.visibility,
          ...(session ? { session } : {}),
        }),
      (deliveries) => ({ deliveries: deliveries.map((each) => this.record(each, session)) }),
    );
    if (answer.kind === 'refused') {
      if (answer.error.code !== 'SESSION_CLOSED') world.violate(`receive: ${answer.error.message}`);
      this.sessionEnded();
    }
    const got = answer.kind === 'ok' ? answer.value : [];
    for (const delivery of got) this.take(delivery, session);
    this.later(got.length > 0 ? world.between(1, 10) : world.between(5, 30), () => this.poll());
  }

  private record(delivery: Delivery, session: string | undefined): DeliveryRecord {
    return {
      id: delivery.id,
      token: delivery.token,
      issuedAt: this.world.now,
      deadline: delivery.deadline,
      deliveryCount: delivery.deliveryCount,
      payloadHash: payloadHash(delivery.payload),
      ...(session ? { session } : {}),
    };
  }

  private take(delivery: Delivery, session: string | undefined): void {
    const { world } = this;
    if (world.redriven.delete(delivery.id)) world.coverage.hit('redrive-delivered');
    if (delivery.deliveryCount > 1 && world.letGo.delete(delivery.id)) {
      world.coverage.hit('redelivered-after-expiry');
    }
    const exactTick = world.faultsOn && world.chance(world.swarm.exactTickRate);
    const held: Held = {
      delivery: this.record(delivery, session),
      deadline: delivery.deadline,
      latestPossibleDeadline: delivery.deadline,
      exactTick,
    };
    this.held.set(delivery.token, held);
    const token = delivery.token;
    if (exactTick) {
      const at = delivery.deadline - (world.chance(0.5) ? 0 : 1);
      this.later(at - world.now, () => this.finish(token, true));
      return;
    }
    const slow = world.faultsOn && world.chance(world.swarm.slowRate);
    const work = slow
      ? world.between(this.visibility, 3 * this.visibility)
      : world.between(1, Math.max(1, Math.floor(this.visibility * 0.6)));
    this.later(work, () => this.finish(token, false));
    if (world.swarm.renewals) this.later(this.visibility / 2, () => this.renew(token));
  }

  private async renew(token: number): Promise<void> {
    const held = this.held.get(token);
    if (held === undefined) return;
    const { world } = this;
    const answer = await world.send<ExtendOp, number | null>(
      this.name,
      { f: 'extend', id: held.delivery.id, token },
      (now) => world.handle.extend(now, token, this.visibility),
      (deadline) => ({ deadline }),
      world.swarm.renewalFailRate,
    );
    if (answer.kind === 'ok' && answer.value !== null) {
      held.deadline = answer.value;
      held.latestPossibleDeadline = Math.max(held.latestPossibleDeadline, answer.value);
      this.later(this.visibility / 2, () => this.renew(token));
    } else if (answer.kind === 'ok') {
      world.coverage.hit('renewal-refused');
      this.letGo(token);
    } else {
      world.coverage.hit('renewal-failed');
      held.latestPossibleDeadline = world.now + this.visibility;
      this.later(this.visibility / 4, () => this.renew(token));
    }
  }

  private async finish(token: number, exactTick: boolean): Promise<void> {
    const held = this.held.get(token);
    if (held === undefined) return;
    const { world } = this;
    if (world.faultsOn && world.chance(world.swarm.crashRate)) return this.crash();
    const poison = held.delivery.id.endsWith('p');
    const roll = exactTick ? 1 : world.random();
    if (poison) return this.settle('nack', held);
    if (world.faultsOn && roll < 0.04) return this.letGo(token);
    if (roll < 0.09) return this.settle('nack', held);
    if (roll < 0.11) return this.settle('reject', held);
    return this.settle('ack', held);
  }

  private async settle(f: SettleOp['f'], held: Held, retry = false): Promise<void> {
    const { world } = this;
    const { id, token } = held.delivery;
    this.held.delete(token);
    const delay = f === 'nack' && world.chance(0.3) ? world.between(1, this.visibility) : 0;
    const answer = await world.send<SettleOp, boolean>(
      this.name,
      { f, id, token },
      (now) =>
        f === 'ack'
          ? world.handle.ack(now, token)
          : world.handle.nack(now, token, { requeue: f === 'nack', delay, reason: 'sim-rejected' }),
      (applied) => ({ applied }),
    );
    if (answer.kind === 'no-answer') {
      if (f === 'ack' && !retry) {
        world.coverage.hit('ack-retried-after-lost-answer');
        this.held.set(token, held);
        this.later(world.between(0, 3), () => this.settle('ack', held, true));
      }
      return;
    }
    if (answer.kind === 'refused') return world.violate(`${f} ${token}: ${answer.error.message}`);
    if (f === 'ack') this.checkAck(held, answer.value);
    if (f === 'reject' && answer.value) world.coverage.hit('dead-by-reject');
    if (!answer.value) world.letGo.add(id);
  }

  /** R3/R8 at the exact tick: live while now < deadline, expired at deadline. */
  private checkAck(held: Held, acked: boolean): void {
    const { world } = this;
    const { token, id } = held.delivery;
    if (acked && world.now >= held.latestPossibleDeadline) {
      world.violate(
        `ack of ${id} (token ${token}) at ${world.now} answered true; deadline ${held.latestPossibleDeadline}`,
      );
    }
    if (!acked) world.coverage.hit('stale-ack');
    const sure = held.latestPossibleDeadline === held.deadline;
    if (sure && !acked && world.now === held.deadline) world.coverage.hit('expiry-at-exact-tick');
    if (sure && acked && world.now === held.deadline - 1) {
      world.coverage.hit('ack-one-tick-before-deadline');
    }
  }

  private letGo(token: number): void {
    const held = this.held.get(token);
    if (held === undefined) return;
    this.held.delete(token);
    this.world.letGo.add(held.delivery.id);
  }

  private crash(): void {
    const { world } = this;
    world.coverage.hit('worker-crash');
    this.generation += 1;
    this.crashed = true;
    for (const token of [...this.held.keys()]) this.letGo(token);
    // The session dies with the process: it times out on the queue's side.
    if (this.session !== undefined) this.recordSessionEnd(this.session.id);
    this.session = undefined;
    this.pausedUntil = 0;
    world.after(world.between(this.visibility / 2, 2 * this.visibility), async () => this.start());
  }

  /** The queue answered SESSION_CLOSED: the session timed out; its deliveries are gone. */
  private sessionEnded(): void {
    const session = this.session;
    if (session === undefined) return;
    const { world } = this;
    const heartbeatEnd = session.lastHeartbeat + session.timeout;
    const ackEnd = Math.min(
      ...[...this.held.values()]
        .filter((held) => held.delivery.session === session.id)
        .map((held) => held.delivery.issuedAt + (session.ackTimeout ?? Number.POSITIVE_INFINITY)),
    );
    world.coverage.hit(ackEnd < heartbeatEnd ? 'session-ack-timeout' : 'session-heartbeat-timeout');
    this.recordSessionEnd(session.id);
    for (const [token, held] of this.held) {
      if (held.delivery.session === session.id) this.letGo(token);
    }
    this.session = undefined;
    this.later(world.between(1, 20), () => this.openSession());
  }

  private recordSessionEnd(session: string): void {
    this.world.recorder.push({
      f: 'session-end',
      session,
      process: this.name,
      invokedAt: this.world.now,
      outcome: 'ok',
    } satisfies Uncompleted<SessionEndOp>);
  }
}
