import { createHash, timingSafeEqual } from 'node:crypto';
import { ConflictError, DeadLetterLoopError } from '../core/index.js';
import { ServerError } from './errors.js';

/**
 * What a key may do to the queues its patterns match. `read` sees a queue, its options and its
 * figures (stats, `/metrics`) and changes nothing: a monitoring key. `admin` includes the
 * others, and any action includes `read`.
 */
export type Action = 'read' | 'publish' | 'consume' | 'admin';

export const ACTIONS: readonly Action[] = ['read', 'publish', 'consume', 'admin'];

/** Whether a grant of `granted` allows `action` (undefined: any right at all). */
function grantAllows(granted: ReadonlySet<Action>, action?: Action): boolean {
  if (action === undefined || action === 'read') return true;
  return granted.has(action) || granted.has('admin');
}

/** One grant of an API key: what it may do to the queues a pattern matches. */
export interface KeyGrant {
  /** A queue-name pattern: `*` matches any run of characters (`orders-*`, `*`). */
  queues: string;
  /** What the key may do to those queues; `admin` includes the others, any of them `read`. */
  actions: Action[];
}

/** One API key as configured: the key itself or its SHA-256 (hex), and what it may do. */
export interface ApiKeyConfig {
  /**
   * The key's name, unique among the keys: the logs of its requests say it, and SQS takes it as
   * the access key id.
   */
  name: string;
  /** The key itself, as sent in `Authorization: Bearer <key>`; give it or `sha256`. */
  key?: string;
  /** The SHA-256 of the key (hex), in place of `key`; a key given so cannot sign SQS requests. */
  sha256?: string;
  /** What the key may do: each grant adds to the others. */
  allow: KeyGrant[];
}

/** Who made a request, and what they may do. */
export interface Principal {
  readonly name: string;
  /** What the key was granted, as configured. */
  readonly grants: readonly KeyGrant[];
  can(action: Action, queue: string): boolean;
  /** Any access at all to the queue: enough to see that it exists and read its stats. */
  canSee(queue: string): boolean;
  /** `action` on every queue, whatever its name (a grant of `*`). */
  canEverywhere(action: Action): boolean;
}

interface CompiledGrant {
  pattern: RegExp;
  actions: ReadonlySet<Action>;
  /** `*`, `**`…: a pattern of stars alone matches every name. */
  everywhere: boolean;
}

interface StoredKey {
  name: string;
  allow: KeyGrant[];
  hash: Buffer;
  /** The key itself, when configured as `key` (needed to check request signatures). */
  secret?: string;
  grants: CompiledGrant[];
}

const LOOPBACK_PRINCIPAL: Principal = {
  name: 'loopback',
  grants: [{ queues: '*', actions: ['admin'] }],
  can: () => true,
  canSee: () => true,
  canEverywhere: () => true,
};

/** API keys, stored as SHA-256 digests and compared in constant time. */
export class AccessControl {
  private readonly keys: StoredKey[];

  constructor(keys: readonly ApiKeyConfig[]) {
    this.keys = keys.map((key) => ({
      name: key.name,
      allow: key.allow.map((grant) => ({ queues: grant.queues, actions: [...grant.actions] })),
      hash: key.sha256 === undefined ? sha256(key.key ?? '') : Buffer.from(key.sha256, 'hex'),
      ...(key.key === undefined ? {} : { secret: key.key }),
      grants: key.allow.map((grant) => ({
        pattern: globToRegExp(grant.queues),
        actions: new Set(grant.actions),
        everywhere: /^\*+$/.test(grant.queues),
      })),
    }));
  }

  /** Without keys every request is allowed; the server then listens on loopback only. */
  get enabled(): boolean {
    return this.keys.length > 0;
  }

  /** The principal an `Authorization: Bearer <key>` header names, or UNAUTHENTICATED. */
  authenticate(header: string | undefined): Principal {
    if (!this.enabled) return LOOPBACK_PRINCIPAL;
    const presented = /^\s*bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
    if (presented === undefined) {
      // Given but not in the form (a key with spaces, another scheme): said as such, unechoed.
      throw new ServerError(
        'UNAUTHENTICATED',
        header === undefined || header.trim() === ''
          ? 'an API key is required: Authorization: Bearer <key>'
          : 'the Authorization header is not "Bearer <key>" (an API key has no spaces)',
      );
    }
    const digest = sha256(presented);
    let found: StoredKey | undefined;
    // Every stored key is compared, so the time taken does not say which one matched.
    for (const key of this.keys) {
      if (timingSafeEqual(digest, key.hash) && found === undefined) found = key;
    }
    if (found === undefined) throw new ServerError('UNAUTHENTICATED', 'the API key is not valid');
    return toPrincipal(found);
  }

  /**
   * The key named `name` for checking a request signature (SQS SigV4: access key id = name,
   * secret = key): its principal, and its secret unless only a SHA-256 digest is configured.
   */
  signingKey(name: string): { principal: Principal; secret: string | undefined } | undefined {
    const found = this.keys.find((key) => key.name === name);
    return found === undefined
      ? undefined
      : { principal: toPrincipal(found), secret: found.secret };
  }
}

/** Refuses with FORBIDDEN unless the principal may do `action` on `queue`. */
export function authorize(principal: Principal, action: Action, queue: string): void {
  if (!principal.can(action, queue)) {
    throw new ServerError('FORBIDDEN', `this key may not ${action} on queue ${queue}`);
  }
}

/**
 * A queue's dead jobs are published to its dead-letter queue (R26): naming one takes the right
 * to publish there, or a key could send any payload to a queue closed to it by way of a nack.
 */
export function authorizeDeadLetterQueue(principal: Principal, target: string): void {
  if (!principal.can('publish', target)) {
    throw new ServerError(
      'FORBIDDEN',
      `this key may not publish on queue ${target}, so it may not make it a dead-letter queue (dead jobs are published there)`,
    );
  }
}

/**
 * `work`, whose refusal of a dead-letter loop (R26) names the way round: to a key that may not
 * see every queue on it, the other queues' settings are not its to read, and none is named.
 */
export async function hidingForeignLoops<T>(
  principal: Principal,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DeadLetterLoopError && !error.chain.every((q) => principal.canSee(q))) {
      throw new ConflictError(
        `deadLetterQueue of ${error.chain[0]} would loop back to it, by way of queues this key may not see`,
      );
    }
    throw error;
  }
}

/**
 * Jobs moved back to the queues they died in (`moveJobs` without `to`) are published there: a
 * key needs the right to publish on each. Named with `origins`, each is checked; unnamed, they
 * are whichever queues the jobs came from, so only a key that may publish everywhere may.
 */
export function authorizeMoveToOrigins(
  principal: Principal,
  origins: readonly string[] | undefined,
): void {
  if (origins !== undefined) {
    for (const origin of origins) authorize(principal, 'publish', origin);
  } else if (!principal.canEverywhere('publish')) {
    throw new ServerError(
      'FORBIDDEN',
      'this key may not publish on every queue, so it may not move jobs back to whichever queues they died in: name those queues with origins (it needs publish on each)',
    );
  }
}

/**
 * Refuses a key with no right at all on `queue`. Checked before the queue is looked up, so that
 * such a key learns nothing of whether it exists (FORBIDDEN either way, never NOT_FOUND).
 */
export function authorizeAny(principal: Principal, queue: string): void {
  if (!principal.canSee(queue)) {
    throw new ServerError('FORBIDDEN', `this key has no rights on queue ${queue}`);
  }
}

function toPrincipal(key: StoredKey): Principal {
  const allows = (queue: string, action?: Action) =>
    key.grants.some((grant) => grant.pattern.test(queue) && grantAllows(grant.actions, action));
  return {
    name: key.name,
    grants: key.allow,
    can: (action, queue) => allows(queue, action),
    canSee: (queue) => allows(queue),
    canEverywhere: (action) =>
      key.grants.some((grant) => grant.everywhere && grantAllows(grant.actions, action)),
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`);
}
