import { connect, createServer, type Socket } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { POSTGRES_URL, postgresSkipReason } from '../crash/postgres.js';

/**
 * A connection pooler in transaction mode (PgBouncer's pool_mode = transaction) runs each
 * transaction on whichever server connection is free: the LISTEN of leaseq's listener holds on
 * none of them, and it hears no NOTIFY. Before, open succeeded and receivers slept through every
 * other process's publish until their waits ended (and the pool's prepared statements failed
 * with PostgreSQL's 42P05, untyped). Open must refuse such a link, naming it.
 */
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

/**
 * A TCP proxy to the tests' PostgreSQL that passes every message of the server but its
 * notifications (NotificationResponse, type 'A'), as such a pooler loses them.
 */
async function deafProxy() {
  const target = new URL(POSTGRES_URL);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    const upstream = connect({ host: target.hostname, port: Number(target.port || 5432) });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    // Server messages: a type byte, then a length that counts itself and the body.
    let pending = Buffer.alloc(0);
    upstream.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      const passed: Buffer[] = [];
      while (pending.length >= 5) {
        const size = 1 + pending.readUInt32BE(1);
        if (pending.length < size) break;
        if (pending[0] !== 0x41) passed.push(pending.subarray(0, size));
        pending = pending.subarray(size);
      }
      if (passed.length > 0) client.write(Buffer.concat(passed));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(POSTGRES_URL);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('PostgreSQL: a link that does not carry LISTEN', () => {
  it('refuses open with StorageUnavailableError naming the pooler mode', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const proxy = await deafProxy();
    try {
      const opened = openEngine(proxy.url);
      await expect(opened).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(opened).rejects.toThrow(/LISTEN.*transaction or statement mode/s);
      const engine = await opened.catch(() => undefined);
      await engine?.close();
    } finally {
      await proxy.close();
    }
  }, 30_000);
});
