import { connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { UnansweredError } from '../../src/client/http.js';
import { ConnectionLostError, RemoteBroker } from '../../src/client/index.js';
import { ClosedError, mayHaveTakenEffect, StorageUnavailableError } from '../../src/core/index.js';
import { freePort } from '../faults/private-postgres.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(): Promise<TestServer> {
  const started = await startTestServer();
  cleanups.push(() => started.close());
  return started;
}

/**
 * A TCP proxy on 127.0.0.1 in front of `port` that forwards requests; while `answers` is
 * 'cut', the first bytes of an answer end both sockets instead (the server has run the
 * request; its answer is lost), 'cut-once' does so for one answer, and while it is 'hold',
 * answers wait.
 */
async function proxy(port: number) {
  const state = {
    answers: 'pass' as 'pass' | 'cut' | 'cut-once' | 'hold',
    /** Answers cut so far. */
    cut: 0,
    /** Bytes of requests forwarded so far. */
    forwarded: 0,
    url: '',
  };
  const sockets = new Set<Socket>();
  const listener = createServer((client) => {
    const upstream = connect({ port, host: '127.0.0.1' });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => {
      state.forwarded += chunk.length;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (state.answers === 'cut' || state.answers === 'cut-once') {
        if (state.answers === 'cut-once') state.answers = 'pass';
        state.cut += 1;
        client.destroy();
        upstream.destroy();
      } else if (state.answers === 'pass') {
        client.write(chunk);
      }
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(listener.address() as { port: number }).port}`;
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        listener.close(() => resolve());
      }),
  );
  return state;
}

function client(url: string, options: ConstructorParameters<typeof RemoteBroker>[1] = {}) {
  const broker = new RemoteBroker(url, { transport: 'http', timeoutMs: 5000, ...options });
  cleanups.push(() => broker.close());
  return broker;
}

/**
 * A publish without an id whose request (or frame) goes out through a proxy that then holds
 * every answer, with a client timeout of 300 ms: what it failed with, and the server behind.
 */
async function publishHeld(transport: 'http' | 'stream') {
  const target = await server();
  const holder = await proxy(Number(new URL(target.baseUrl).port));
  const broker = client(holder.url, { transport, timeoutMs: 300 });
  const queue = broker.handle('jobs');
  await broker.queue('jobs');
  await queue.publish({ id: 'warm' });
  holder.answers = 'hold';
  const error = await queue.publish({ payload: 'no id' }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return { target, holder, error };
}

describe('plain HTTP: a lost answer is not a server out of reach', () => {
  for (const sender of ['node:http', 'fetch'] as const) {
    it(`a request sent whose answer never came fails CONNECTION_LOST, retryable (${sender})`, async () => {
      const target = await server();
      const cutter = await proxy(Number(new URL(target.baseUrl).port));
      const broker = client(cutter.url, sender === 'fetch' ? { fetch: globalThis.fetch } : {});
      const queue = broker.handle('jobs');
      await broker.queue('jobs');
      await queue.publish({ id: 'warm' });
      cutter.answers = 'cut';
      const error = await queue.publish({ payload: 'no id' }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(cutter.cut).toBeGreaterThan(0);
      expect(error).toBeInstanceOf(ConnectionLostError);
      expect(error).toMatchObject({
        code: 'CONNECTION_LOST',
        retryable: true,
        mayHaveTakenEffect: true,
      });
      expect((error as Error).message).toContain('may or may not have taken effect');
      // It did take effect: the publish is in the queue.
      expect((await (await target.broker.queue('jobs')).stats()).ready).toBe(2);
    });
  }

  it('a request sent whose answer is held past timeoutMs says it may have taken effect, not cannot reach', async () => {
    const { target, holder, error } = await publishHeld('http');
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect((error as Error).message).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+ did not answer within 300 ms: the request may or may not have taken effect$/,
    );
    expect(mayHaveTakenEffect(error)).toBe(true);
    expect((await (await target.broker.queue('jobs')).stats()).ready).toBe(2);
    // Held while the client first reads the server's limits: the call itself was never sent.
    const fresh = client(holder.url, { timeoutMs: 300 });
    const unsent = await fresh
      .handle('jobs')
      .publish({ payload: 'unsent' })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(unsent).toBeInstanceOf(StorageUnavailableError);
    expect((unsent as Error).message).toContain('nothing was sent');
    expect((unsent as Error).message).not.toContain('may or may not');
    expect(mayHaveTakenEffect(unsent)).toBe(false);
    expect((await (await target.broker.queue('jobs')).stats()).ready).toBe(2);
  });

  it("a write whose server's limits could not be read was never sent: STORAGE_UNAVAILABLE, not CONNECTION_LOST", async () => {
    const target = await server();
    const cutter = await proxy(Number(new URL(target.baseUrl).port));
    cutter.answers = 'cut';
    // The first publish reads the limits first (GET /v1/limits): those answers are cut.
    const error = await client(cutter.url)
      .handle('jobs')
      .publish({ payload: 'no id' })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect((error as Error).message).toContain('nothing was sent');
    expect(mayHaveTakenEffect(error)).toBe(false);
    expect(await target.broker.listQueues()).toEqual([]);
  });

  it('a server never reached is STORAGE_UNAVAILABLE, cannot reach (node:http and fetch)', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    for (const options of [{}, { fetch: globalThis.fetch }]) {
      const error = await client(url, options)
        .handle('jobs')
        .publish({ id: 'a' })
        .then(
          () => undefined,
          (caught: unknown) => caught,
        );
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect((error as Error).message).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+: /);
      expect(mayHaveTakenEffect(error)).toBe(false);
    }
  });

  it('a read whose answer was lost is sent again once, as a keep-alive connection closed under it', async () => {
    const target = await server();
    const cutter = await proxy(Number(new URL(target.baseUrl).port));
    const broker = client(cutter.url);
    const queue = await broker.queue('jobs');
    await queue.publish({ id: 'a' });
    cutter.answers = 'cut-once';
    // A GET: its first answer is cut; the request sent again is answered.
    expect((await broker.listQueues()).map((view) => view.name)).toEqual(['jobs']);
    expect(cutter.cut).toBe(1);
    // Only reads: a write whose answer was lost is not sent again.
    cutter.answers = 'cut';
    await expect(queue.publish({ id: 'b' })).rejects.toBeInstanceOf(ConnectionLostError);
    expect(cutter.cut).toBe(2);
  });
});

describe('plain HTTP: close() with calls in flight', () => {
  it('a call in flight fails with ClosedError (CLOSED) saying it may or may not have taken effect, as over the stream', async () => {
    const target = await server();
    const holder = await proxy(Number(new URL(target.baseUrl).port));
    const broker = client(holder.url);
    const queue = await broker.queue('jobs');
    await queue.publish({ id: 'warm' });
    holder.answers = 'hold';
    const sentBefore = holder.forwarded;
    const publish = queue.publish({ id: 'a' }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    const stats = queue.stats().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    await expect.poll(() => holder.forwarded > sentBefore).toBe(true);
    await broker.close();
    // Sent: the server may have run them (the publish did, its answer held).
    for (const error of [await publish, await stats]) {
      expect(error).toBeInstanceOf(ClosedError);
      expect(error).toMatchObject({
        code: 'CLOSED',
        message:
          'the client was closed while this call was in flight: it may or may not have taken effect',
        mayHaveTakenEffect: true,
      });
    }
    await expect(queue.publish({ id: 'b' })).rejects.toBeInstanceOf(ClosedError);
    await expect(queue.receive({ wait: 1000 })).rejects.toBeInstanceOf(ClosedError);
  });

  it('a call whose read of the server limits was cut by close() was never sent: CLOSED, not maybe done', async () => {
    const target = await server();
    const holder = await proxy(Number(new URL(target.baseUrl).port));
    const broker = client(holder.url);
    holder.answers = 'hold';
    // The first call reads the server's limits (GET /v1/limits) before it goes: held.
    const publish = broker
      .handle('jobs')
      .publish({ payload: 'unsent' })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    await expect.poll(() => holder.forwarded > 0).toBe(true);
    await broker.close();
    const error = await publish;
    expect(error).toBeInstanceOf(ClosedError);
    expect(error).toMatchObject({ code: 'CLOSED', message: 'the client is closed' });
    expect(mayHaveTakenEffect(error)).toBe(false);
  });

  it('a waiting receive answers empty on close(), and on its own signal', async () => {
    const target = await server();
    const broker = client(target.baseUrl);
    const queue = await broker.queue('jobs');
    const controller = new AbortController();
    const aborted = queue.receive({ wait: 10_000, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    expect(await aborted).toEqual([]);
    const waiting = queue.receive({ wait: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = performance.now();
    await broker.close();
    expect(await waiting).toEqual([]);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('the stream: a frame sent whose answer does not come in time', () => {
  it('says it may have taken effect, as an UnansweredError, not cannot reach', async () => {
    const { target, error } = await publishHeld('stream');
    expect(error).toBeInstanceOf(UnansweredError);
    expect(error).toMatchObject({ code: 'STORAGE_UNAVAILABLE', mayHaveTakenEffect: true });
    expect((error as Error).message).toMatch(
      /^ws:\/\/127\.0\.0\.1:\d+\/v1\/stream did not answer within 300 ms: the call may or may not have taken effect$/,
    );
    // It did: the frame went out and the server ran it.
    expect((await (await target.broker.queue('jobs')).stats()).ready).toBe(2);
  });
});

describe('the stream: close() with a frame in flight', () => {
  it('fails it with ClosedError (CLOSED) saying it may or may not have taken effect, and a later call as never sent', async () => {
    const target = await server();
    const holder = await proxy(Number(new URL(target.baseUrl).port));
    const broker = client(holder.url, { transport: 'stream' });
    const queue = await broker.queue('jobs');
    await queue.publish({ id: 'warm' });
    holder.answers = 'hold';
    const sentBefore = holder.forwarded;
    const publish = queue.publish({ payload: 'no id' }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    await expect.poll(() => holder.forwarded > sentBefore).toBe(true);
    await broker.close({ signal: AbortSignal.abort() });
    const error = await publish;
    expect(error).toBeInstanceOf(ClosedError);
    expect(error).toMatchObject({
      code: 'CLOSED',
      message:
        'the client was closed while this call was in flight: it may or may not have taken effect',
      mayHaveTakenEffect: true,
    });
    // It did: the frame went out and the server ran it.
    await expect.poll(async () => (await target.broker.handle('jobs').stats()).ready).toBe(2);
    const later = await queue.publish({ id: 'b' }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(later).toBeInstanceOf(ClosedError);
    expect(mayHaveTakenEffect(later)).toBe(false);
  });
});
