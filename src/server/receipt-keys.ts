import type { FastifyBaseLogger } from 'fastify';
import type { Broker } from '../broker/index.js';
import type { Receipts } from './receipts.js';

/** The name of the receipt signing secret in the storage. */
export const RECEIPT_SECRET_NAME = 'receipt';

/** How often a server re-reads the stored secret, so a rotation reaches every server. */
export const RECEIPT_KEYS_REFRESH_MS = 10_000;

/** The grace period of `leaseq secret rotate`: the previous secret stays valid this long. */
export const DEFAULT_RECEIPT_ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

/**
 * With no receiptSecret configured, receipts are signed with the secret kept in the storage,
 * so restarts and several servers over one storage agree. Re-read every
 * RECEIPT_KEYS_REFRESH_MS; returns the end of the re-reading. A storage that keeps no secrets
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
  const load = async () => {
    const values = await secretValues(RECEIPT_SECRET_NAME);
    receipts.useKeys(values.map((hex) => Buffer.from(hex, 'hex')));
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
