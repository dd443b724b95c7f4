import { createHmac } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Broker } from '../broker/index.js';
import { Receipts } from './receipts.js';

/** The name of the receipt signing secret in the storage. */
export const RECEIPT_SECRET_NAME = 'receipt';

/** The name of the stored secret that tells one life of a storage kept in memory from the next. */
export const INCARNATION_SECRET_NAME = 'receipt-incarnation';

/** How often a server re-reads the stored secret, so a rotation reaches every server. */
export const RECEIPT_KEYS_REFRESH_MS = 10_000;

/** The grace period of `leaseq secret rotate`: the previous secret stays valid this long. */
export const DEFAULT_RECEIPT_ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

/**
 * With no receiptSecret configured, receipts are signed with the secret kept in the storage,
 * so restarts and several servers over one storage agree. Re-read every
 * RECEIPT_KEYS_REFRESH_MS (a new one signs a period later, see SigningKeyChoice); returns the
 * end of the re-reading. A storage that keeps no secrets
 * (a remote broker) leaves the random per-process secret, with a warning.
 */
export async function useStoredReceiptKeys(
  broker: Broker,
  receipts: Receipts,
  logger: FastifyBaseLogger,
): Promise<() => void> {
  const secretValues = broker.secretValues?.bind(broker);
  if (secretValues === undefined) {
    logger.warn(
      'no receiptSecret configured and the storage keeps no secrets: a random one is used, so receipts will not survive a restart',
    );
    return () => {};
  }
  const choice = new SigningKeyChoice();
  const load = async () => {
    const values = await secretValues(RECEIPT_SECRET_NAME);
    const keys = choice.keys(
      values.map((hex) => Buffer.from(hex, 'hex')),
      Date.now(),
    );
    if (keys !== undefined) receipts.useKeys(keys);
  };
  await load();
  logger.info(
    'no receiptSecret configured: receipts are signed with the secret kept in the storage',
  );
  const timer = setInterval(() => {
    load().catch((error: unknown) =>
      logger.warn({ err: error }, 'could not re-read the receipt secret; keeping the last one'),
    );
  }, RECEIPT_KEYS_REFRESH_MS).unref();
  return () => clearInterval(timer);
}

/**
 * Which of the stored secrets signs. A rotation stores a new current secret; each server reads it
 * within RECEIPT_KEYS_REFRESH_MS. A server that signed with it at once would hand out receipts
 * the servers that have not read it yet refuse (INVALID_RECEIPT, for up to that long behind a
 * load balancer). So a new current secret is accepted at once but signs only once it has been
 * stored for a whole refresh period as this server saw it — by then every server has read it —
 * while the one it replaces is still accepted (within the rotation's grace period); a server's
 * first read signs with the current one.
 */
export class SigningKeyChoice {
  private signing: Buffer | undefined;
  /** When this server first read the current secret that does not sign yet. */
  private pendingSince: number | undefined;
  private applied: readonly Buffer[] = [];

  /**
   * The keys for Receipts.useKeys (the first signs) from the stored ones (current first), at
   * `now`; undefined when they are those applied last (nothing to change).
   */
  keys(stored: readonly Buffer[], now: number): Buffer[] | undefined {
    const [current] = stored;
    if (current === undefined) return undefined;
    const signing = this.signing;
    if (signing === undefined || !stored.some((key) => key.equals(signing))) {
      this.sign(current);
    } else if (!signing.equals(current)) {
      this.pendingSince ??= now;
      if (now - this.pendingSince >= RECEIPT_KEYS_REFRESH_MS) this.sign(current);
    }
    const first = this.signing as Buffer;
    const keys = [first, ...stored.filter((key) => !key.equals(first))];
    const same =
      keys.length === this.applied.length &&
      keys.every((key, index) => key.equals(this.applied[index] as Buffer));
    if (same) return undefined;
    this.applied = keys;
    return keys;
  }

  private sign(key: Buffer): void {
    this.signing = key;
    this.pendingSince = undefined;
  }
}

/**
 * The keys receipts are signed with (the first) and verified with (each): the configured secret,
 * or a random one until the stored one is read (useStoredReceiptKeys). A configured secret is
 * bound to the storage it is used over, through a value made at the first start on it and kept
 * there: tokens and generated ids are those of one storage, and start again at 1 on another, so
 * a receipt kept from a storage the server no longer uses (a new SQLite file, a move to
 * PostgreSQL, a storage kept in memory and restarted) would name a new delivery of another job
 * there, and a late ack with it would complete a job nobody worked on. Several servers over one
 * storage share that value, and so their receipts. Over a durable storage the configured secret
 * itself still verifies, never signs: what a server that signed with it alone issued before it
 * was upgraded settles its delivery while its lease lasts.
 */
export async function receiptSigningKeys(
  broker: Broker,
  configured: string | undefined,
  logger: FastifyBaseLogger,
): Promise<(string | Buffer)[]> {
  if (configured === undefined) return [Receipts.randomSecret()];
  const [incarnation] = (await broker.secretValues?.(INCARNATION_SECRET_NAME)) ?? [];
  const bound = (value: string) => createHmac('sha256', configured).update(value).digest();
  if (broker.durable === false) {
    logger.info(
      'the storage keeps nothing across a restart: receipts signed with receiptSecret are refused after one',
    );
    return [bound(incarnation ?? Receipts.randomSecret().toString('hex'))];
  }
  // A storage that keeps no secrets (a broker over HTTP): the configured secret as it is.
  if (incarnation === undefined) return [configured];
  return [bound(incarnation), configured];
}
