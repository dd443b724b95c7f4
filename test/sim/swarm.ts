import { between, prng } from '../crash/protocol.js';

/**
 * The faults and shapes one seed runs with ("swarm testing": each seed switches a random
 * subset of faults on, so that rare combinations and fault-free stretches both occur).
 * Times are ms of simulated time.
 */
export interface Swarm {
  visibilityMs: number;
  maxDeliveries: number;
  producers: number;
  workers: number;
  /** Share of workers that consume under a session (heartbeat timeout, maybe ackTimeout). */
  sessionShare: number;
  /** Sessions also get an ackTimeout shorter than the lease (RabbitMQ's consumer timeout). */
  ackTimeouts: boolean;
  /** A request never reaches the queue; the caller sees no answer. */
  droppedRate: number;
  /** A request is applied but its answer is lost. */
  lostAnswerRate: number;
  /** Extra failure rate of lease renewals (extend). */
  renewalFailRate: number;
  /** Workers renew their leases while they work. */
  renewals: boolean;
  /** A worker crashes (per delivery it finishes) and restarts later. */
  crashRate: number;
  /** A job takes longer than its lease; a session worker stops heartbeating meanwhile. */
  slowRate: number;
  /** A job always fails (nack): it ends dead by maxDeliveries. */
  poisonRate: number;
  /** An operator redrives dead jobs this often; 0: never. */
  redriveEveryMs: number;
  /** BUGGIFY: a worker acts exactly at its lease's deadline (or one tick before). */
  exactTickRate: number;
}

const on = (random: () => number, rate: number) => (random() < 0.6 ? rate : 0);

/** The swarm of a seed: the same seed gives the same swarm. */
export function swarmOf(seed: number): Swarm {
  const random = prng(seed ^ 0x5eed);
  const visibilityMs = between(random, 40, 400);
  return {
    visibilityMs,
    maxDeliveries: between(random, 2, 5),
    producers: between(random, 1, 3),
    workers: between(random, 2, 6),
    sessionShare: random() < 0.6 ? random() : 0,
    ackTimeouts: random() < 0.5,
    droppedRate: on(random, 0.02 + random() * 0.08),
    lostAnswerRate: on(random, 0.02 + random() * 0.08),
    renewalFailRate: on(random, random() * 0.3),
    renewals: random() < 0.6,
    crashRate: on(random, random() * 0.03),
    slowRate: on(random, random() * 0.2),
    poisonRate: on(random, random() * 0.05),
    redriveEveryMs: random() < 0.5 ? between(random, visibilityMs, 10 * visibilityMs) : 0,
    exactTickRate: on(random, 0.05 + random() * 0.1),
  };
}
