/**
 * The line protocol between the crash-test children and the parent. A child writes one line
 * per event with a synchronous write, so a line the parent reads names an operation that had
 * returned (or, for intents, one that had at least started) before the child died.
 */

/** What a child is asked to do; passed as one JSON argument. */
export type ChildArgs = CrashChildArgs | ConsumeChildArgs;

/** Publish and consume at once until killed (the crash rounds). */
export interface CrashChildArgs {
  mode: 'crash';
  url: string;
  durability?: 'fsync' | 'os';
  queue: string;
  visibility: number;
  seed: number;
  /** Prefix of the ids this child publishes, unique per round. */
  idPrefix: string;
  publishers: number;
  consumers: number;
  /** The child exits by itself after this long, should the parent never kill it. */
  lifetimeMs: number;
}

/** Consume an already published queue with `loops` receive/ack loops, then exit. */
export interface ConsumeChildArgs {
  mode: 'consume';
  url: string;
  queue: string;
  seed: number;
  loops: number;
  maxPerReceive: number;
  lifetimeMs: number;
}

export type Line =
  /** The child opened its storage and queue. */
  | { kind: 'ready' }
  /** A publish (one id) or a batch publish (several) is about to be called. */
  | { kind: 'publishing'; ids: string[] }
  /** That publish returned: committed (R5). */
  | { kind: 'published'; ids: string[] }
  /** A receive returned this delivery. */
  | { kind: 'reserved'; id: string; token: number; deliveryCount: number }
  /** An ack of this delivery is about to be called. */
  | { kind: 'acking'; id: string; token: number }
  /** That ack returned `ok`. */
  | { kind: 'acked'; id: string; token: number; ok: boolean }
  /** Consume mode: one delivery, reported after its ack returned. */
  | {
      kind: 'delivery';
      id: string;
      token: number;
      reservedAt: number;
      ackedAt: number;
      ok: boolean;
    }
  /** Consume mode: every loop found the queue empty. */
  | { kind: 'done'; deliveries: number }
  /** Something the test does not expect happened in the child. */
  | { kind: 'error'; message: string };

export function formatLine(line: Line): string {
  switch (line.kind) {
    case 'ready':
      return 'ready';
    case 'publishing':
    case 'published':
      return `${line.kind} ${line.ids.join(',')}`;
    case 'reserved':
      return `reserved ${line.id} ${line.token} ${line.deliveryCount}`;
    case 'acking':
      return `acking ${line.id} ${line.token}`;
    case 'acked':
      return `acked ${line.id} ${line.token} ${line.ok}`;
    case 'delivery':
      return `delivery ${line.id} ${line.token} ${line.reservedAt} ${line.ackedAt} ${line.ok}`;
    case 'done':
      return `done ${line.deliveries}`;
    case 'error':
      return `error ${line.message.replace(/\s+/g, ' ')}`;
  }
}

/** Parses one complete line; throws on anything malformed (a torn or foreign line). */
export function parseLine(text: string): Line {
  const [kind = '', ...rest] = text.split(' ');
  const int = (value: string | undefined): number => {
    if (value === undefined || !/^\d+$/.test(value)) throw new Error(`bad line: ${text}`);
    return Number(value);
  };
  const bool = (value: string | undefined): boolean => {
    if (value !== 'true' && value !== 'false') throw new Error(`bad line: ${text}`);
    return value === 'true';
  };
  const id = (value: string | undefined): string => {
    if (value === undefined || value === '') throw new Error(`bad line: ${text}`);
    return value;
  };
  switch (kind) {
    case 'ready':
      return { kind };
    case 'publishing':
    case 'published':
      return { kind, ids: id(rest[0]).split(',').map(id) };
    case 'reserved':
      return { kind, id: id(rest[0]), token: int(rest[1]), deliveryCount: int(rest[2]) };
    case 'acking':
      return { kind, id: id(rest[0]), token: int(rest[1]) };
    case 'acked':
      return { kind, id: id(rest[0]), token: int(rest[1]), ok: bool(rest[2]) };
    case 'delivery':
      return {
        kind,
        id: id(rest[0]),
        token: int(rest[1]),
        reservedAt: int(rest[2]),
        ackedAt: int(rest[3]),
        ok: bool(rest[4]),
      };
    case 'done':
      return { kind, deliveries: int(rest[0]) };
    case 'error':
      return { kind, message: rest.join(' ') };
    default:
      throw new Error(`bad line: ${text}`);
  }
}

/** A small seeded PRNG (mulberry32): the same seed replays the same choices. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [min, max], both included. */
export function between(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}
