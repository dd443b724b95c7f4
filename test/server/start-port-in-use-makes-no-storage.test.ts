import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, startServer } from '../../src/server/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

const directory = temporaryDirectory('leaseq-port-in-use-');

/** A port something else listens on. */
async function portInUse(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('startServer on a port in use, over a SQLite file not made yet', () => {
  it('fails before it makes the file or its directories', async () => {
    const taken = await portInUse();
    const where = join(directory, 'not-made', 'leaseq.db');
    try {
      const config = loadConfig({
        flags: { storage: `sqlite:${where}`, port: String(taken.port), logLevel: 'silent' },
      });
      await expect(startServer(config, { logDestination: { write: () => true } })).rejects.toThrow(
        /EADDRINUSE/,
      );
      expect(existsSync(join(directory, 'not-made'))).toBe(false);
    } finally {
      await new Promise<void>((resolve) => taken.server.close(() => resolve()));
    }
  });
});
