import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { open } from '../../src/index.js';
import { DEFAULT_CONFIG, startServer } from '../../src/server/index.js';
import { RECEIPT_KEYS_REFRESH_MS } from '../../src/server/receipt-keys.js';

/** A port something else listens on. */
async function portInUse(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('startServer on a port in use', () => {
  it('leaves nothing reading the storage it closed', async () => {
    const taken = await portInUse();
    const broker = await open('memory:');
    const reads = vi.spyOn(broker, 'secretValues');
    // Only the periodic re-reading of the receipt secret is driven by hand.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      await expect(
        startServer(
          { ...DEFAULT_CONFIG, storage: 'memory:', port: taken.port },
          { broker, logDestination: { write: () => true } },
        ),
      ).rejects.toThrow(/EADDRINUSE/);
      const readsAtFailure = reads.mock.calls.length;
      expect(readsAtFailure).toBeGreaterThan(0);
      vi.advanceTimersByTime(RECEIPT_KEYS_REFRESH_MS * 3);
      expect(reads.mock.calls.length).toBe(readsAtFailure);
    } finally {
      vi.useRealTimers();
      await new Promise<void>((resolve) => taken.server.close(() => resolve()));
    }
  });
});
