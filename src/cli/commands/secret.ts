import { existsSync } from 'node:fs';
import { NotFoundError } from '../../core/index.js';
import { redactUrl, storageUrlProblem } from '../../engine/index.js';
import { open } from '../../open.js';
import { DEFAULT_CONFIG } from '../../server/config.js';
import {
  DEFAULT_RECEIPT_ROTATION_GRACE_MS,
  RECEIPT_KEYS_REFRESH_MS,
  RECEIPT_SECRET_NAME,
} from '../../server/receipt-keys.js';
import { type Command, EXIT, UsageError } from '../command.js';
import { integerFlag, positionals, stringFlag } from '../flags.js';

export const secretRotate: Command = {
  name: 'secret rotate',
  summary: 'Replace the receipt secret kept in the storage (the previous one stays valid a while)',
  usage: '[--storage URL] [--grace-ms N]',
  details: [
    'For servers started without receiptSecret, which sign receipts with the secret kept in',
    'the storage. Every server picks up the new secret within',
    `${RECEIPT_KEYS_REFRESH_MS / 1000} s; receipts signed with the previous one are accepted`,
    'until the grace period ends.',
    '',
    `--storage URL    the storage (LEASEQ_STORAGE; default ${DEFAULT_CONFIG.storage})`,
    `--grace-ms N     how long the previous secret stays valid (default ${DEFAULT_RECEIPT_ROTATION_GRACE_MS}, 24 h)`,
  ],
  options: { storage: { type: 'string' }, 'grace-ms': { type: 'string' } },
  remote: false,
  async run({ values, positionals: given, context }) {
    positionals(given, []);
    const graceMs = integerFlag(values, 'grace-ms') ?? DEFAULT_RECEIPT_ROTATION_GRACE_MS;
    const storage =
      stringFlag(values, 'storage') ?? context.env.LEASEQ_STORAGE ?? DEFAULT_CONFIG.storage;
    // Checked as serve checks its storage, before anything is opened: open() would take a
    // server's URL for a client and offer one for a mistyped storage; memory: keeps no secret
    // that a server could read, so it is neither taken nor offered.
    const problem = storageUrlProblem(storage, { servers: false, memory: false });
    if (problem !== undefined) throw new UsageError(problem);
    // Opening a SQLite path that does not exist would make a new, empty database and rotate
    // its secret: no server would see it, while the operator believes they rotated theirs.
    const file = storage.startsWith('sqlite:') ? storage.slice('sqlite:'.length) : undefined;
    if (file !== undefined && !existsSync(file)) {
      throw new UsageError(
        `no storage at ${file}: name the storage your servers use (--storage or LEASEQ_STORAGE)`,
      );
    }
    const broker = await open(storage);
    try {
      if (broker.rotateSecret === undefined) {
        throw new UsageError(`${storage} keeps no secrets; name a SQL storage`);
      }
      await broker.rotateSecret(RECEIPT_SECRET_NAME, graceMs).catch((error: unknown) => {
        // No server without receiptSecret ever started on it: not the storage the servers use
        // (or they sign with a configured secret, which this does not change).
        if (!(error instanceof NotFoundError)) throw error;
        throw new UsageError(
          `${redactUrl(storage)} keeps no receipt secret: no server without receiptSecret has started on it; name the storage your servers use (--storage or LEASEQ_STORAGE), or give servers with a configured receiptSecret a new one`,
        );
      });
    } finally {
      await broker.close();
    }
    context.stdout.write(
      `rotated the receipt secret; the previous one stays valid for ${graceMs} ms\n`,
    );
    return EXIT.ok;
  },
};
