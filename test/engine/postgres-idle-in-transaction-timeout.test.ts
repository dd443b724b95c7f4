import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mayHaveTakenEffect, open, StorageUnavailableError } from '../../src/index.js';
import { postgresSkipReason, withPostgresClient } from '../crash/postgres.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';

/**
 * PostgreSQL ends a session left idle in a transaction for longer than its
 * idle_in_transaction_session_timeout (FATAL 25P03). Where the next statement was already on
 * its way, that statement is answered with the FATAL itself: it fails as the database's
 * state, typed (StorageUnavailableError, nothing written), never as a raw driver error.
 */
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('idle_in_tx');
});

afterAll(async () => {
  await scratch?.drop();
});

/**
 * A proxy to the database that, from `hold()` on, keeps what the database sends on each
 * connection until that connection's client sends again, and relays it then: the client's
 * next statement goes out before it reads what the database said meanwhile.
 */
class AnswerHolder {
  private readonly server: Server = createServer((client) => this.accept(client));
  private readonly sockets = new Set<Socket>();
  private readonly holds = new Set<() => void>();

  constructor(private readonly upstream: URL) {}

  async url(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const via = new URL(this.upstream.href);
    via.hostname = '127.0.0.1';
    via.port = String((this.server.address() as { port: number }).port);
    return via.href;
  }

  hold(): void {
    for (const start of this.holds) start();
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    const upstream = connect(Number(this.upstream.port || 5432), this.upstream.hostname);
    this.sockets.add(client).add(upstream);
    let holding = false;
    let upstreamEnded = false;
    const held: Buffer[] = [];
    this.holds.add(() => {
      holding = true;
    });
    client.on('data', (chunk: Buffer) => {
      if (!upstream.destroyed) upstream.write(chunk);
      if (!holding) return;
      holding = false;
      for (const bytes of held.splice(0)) client.write(bytes);
      if (upstreamEnded) client.end();
    });
    upstream.on('data', (chunk: Buffer) => {
      if (holding) held.push(chunk);
      else client.write(chunk);
    });
    upstream.on('close', () => {
      upstreamEnded = true;
      if (!holding) client.end();
    });
    upstream.on('error', () => undefined);
    client.on('error', () => undefined);
    client.on('close', () => upstream.destroy());
  }
}

/** Waits until the backend `pid` has ended. */
async function backendGone(url: string, pid: number): Promise<void> {
  for (;;) {
    const { rowCount } = await withPostgresClient(
      (client) => client.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]),
      url,
    );
    if (rowCount === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('PostgreSQL: a session ended for idling in a transaction', () => {
  it('a statement answered by the idle-in-transaction timeout fails with StorageUnavailableError, nothing written', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = scratch as ScratchDatabase;
    const holder = new AnswerHolder(new URL(db.url()));
    const url = new URL(await holder.url());
    url.searchParams.set('options', '-c idle_in_transaction_session_timeout=300');
    const broker = await open(url.href);
    try {
      const queue = await broker.queue('idle');
      const failure = await broker
        .transaction(async (tx) => {
          await tx.publish('idle', { id: 'in-tx' });
          const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          holder.hold();
          // The database ends the session meanwhile; this process reads that only after the
          // next statement went out.
          await backendGone(db.url(), (row as { pid: number }).pid);
          await tx.query('SELECT 1');
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(failure).toBeInstanceOf(StorageUnavailableError);
      expect((failure as Error).message).toMatch(/idle-in-transaction timeout/);
      expect(mayHaveTakenEffect(failure)).toBe(false);
      expect(await queue.job('in-tx')).toBeUndefined();
      // The broker goes on, on another connection.
      await expect(queue.publish({ id: 'after' })).resolves.toMatchObject({ duplicate: false });
    } finally {
      await broker.close();
      await holder.close();
    }
  });

  it('a statement after the session was ended meanwhile fails with StorageUnavailableError naming the timeout, nothing written', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = scratch as ScratchDatabase;
    const broker = await open(db.url({ options: '-c idle_in_transaction_session_timeout=300' }));
    try {
      const queue = await broker.queue('idle-read');
      const failure = await broker
        .transaction(async (tx) => {
          await tx.publish('idle-read', { id: 'in-tx' });
          const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          // The database ends the session, and this process reads that, before the next
          // statement: refused unsent by the driver, which names no reason of its own.
          await backendGone(db.url(), (row as { pid: number }).pid);
          await tx.query('SELECT 1');
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(failure).toBeInstanceOf(StorageUnavailableError);
      expect((failure as Error).message).toMatch(/idle-in-transaction timeout/);
      expect(mayHaveTakenEffect(failure)).toBe(false);
      expect(await queue.job('in-tx')).toBeUndefined();
      await expect(queue.publish({ id: 'after' })).resolves.toMatchObject({ duplicate: false });
    } finally {
      await broker.close();
    }
  });

  it('a big statement being sent as the session ends for idling fails naming that timeout, nothing written', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const db = scratch as ScratchDatabase;
    const broker = await open(db.url({ options: '-c idle_in_transaction_session_timeout=100' }));
    try {
      const queue = await broker.queue('idle-write');
      const failure = await broker
        .transaction(async (tx) => {
          await tx.publish('idle-write', { id: 'in-tx' });
          // Work between two statements that holds the event loop, far past the timeout: the
          // database ends the session meanwhile, and this process reads nothing of it before it
          // writes the next statement, too big for the socket to take at once.
          const until = Date.now() + 1_000;
          while (Date.now() < until) {}
          await tx.query('SELECT length(?) AS length', ['x'.repeat(32 * 1024 * 1024)]);
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(failure).toBeInstanceOf(StorageUnavailableError);
      // (The URL in the message names the setting too: the words around it are the reason.)
      expect((failure as Error).message).toMatch(
        /longer than its idle_in_transaction_session_timeout|idle-in-transaction timeout/,
      );
      expect(mayHaveTakenEffect(failure)).toBe(false);
      expect(await queue.job('in-tx')).toBeUndefined();
    } finally {
      await broker.close();
    }
  });
});
