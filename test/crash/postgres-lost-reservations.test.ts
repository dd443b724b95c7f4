import { afterEach, describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../src/core/index.js';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { TOKEN_BLOCK } from '../../src/engine/sql/token-block.js';
import { PrivatePostgres } from '../faults/private-postgres.js';

/**
 * R21 on PostgreSQL across a real server crash: reservations commit without waiting for the
 * WAL flush, so `pg_ctl restart -m immediate` (no checkpoint, WAL buffers lost, recovery at
 * start) may lose the last of them. Each lost one must come back as a ready job under a fresh
 * token, its old token refused; no token may ever be handed out twice. The cluster is a private
 * one (initdb in a temp dir): the machine's shared server is never crashed.
 */
let cluster: PrivatePostgres | undefined;
let engine: Engine | undefined;

afterEach(async () => {
  await engine?.close().catch(() => undefined);
  await cluster?.destroy();
  engine = undefined;
  cluster = undefined;
});

/** Retries `action` while the storage is still coming back from its crash. */
async function once<T>(action: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await action();
    } catch (error) {
      if (!(error instanceof StorageUnavailableError) || attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe('PostgreSQL: reservations lost to a server crash', () => {
  it('come back ready under fresh tokens; old tokens are refused, none repeats', {
    timeout: 60_000,
  }, async (context) => {
    const unavailable = PrivatePostgres.unavailable();
    if (unavailable !== undefined) {
      if (process.env.CI === 'true') throw new Error(unavailable);
      context.skip(unavailable);
    }
    cluster = await PrivatePostgres.start();
    engine = await openEngine(cluster.url);
    const queue = await engine.queue('jobs', { visibility: 60_000 });
    const ids = Array.from({ length: 40 }, (_, index) => `j${index}`);
    await queue.publishBatch(
      0,
      ids.map((id) => ({ id })),
    );
    // Token 1 raises the mark in a synced commit; tokens 2…30 are within it, not synced.
    const before = new Map<string, number>();
    for (let now = 1; now <= 30; now++) {
      for (const delivery of await queue.reserve(now)) before.set(delivery.id, delivery.token);
    }
    expect([...before.values()]).toEqual(Array.from({ length: 30 }, (_, index) => index + 1));

    await cluster.crashRestart();

    // The same engine goes on: its new connections notice the crash before anything else.
    const stats = await once(() => queue.stats(31));
    const lost = stats.ready - (ids.length - before.size);
    const after = await queue.reserve(32, { max: ids.length });
    const tokensAfter = after.map((delivery) => delivery.token);
    // Every token handed out after the crash is above the mark: none can repeat an old one.
    expect(Math.min(...tokensAfter)).toBe(1 + TOKEN_BLOCK + 1);
    expect(new Set(tokensAfter).size).toBe(tokensAfter.length);
    expect(after).toHaveLength(ids.length - before.size + lost);
    const reissued = after.filter((delivery) => before.has(delivery.id));
    expect(reissued).toHaveLength(lost);
    for (const delivery of reissued) {
      // Lost with its commit: handed out as if for the first time, the old token dead.
      expect(delivery.deliveryCount).toBe(1);
      expect(await queue.ack(33, before.get(delivery.id) ?? 0)).toBe(false);
    }
    for (const delivery of after) expect(await queue.ack(33, delivery.token)).toBe(true);
    // The reservations that survived are still live under their tokens.
    for (const [id, token] of before) {
      if (reissued.some((delivery) => delivery.id === id)) continue;
      expect(await queue.ack(33, token)).toBe(true);
    }
    expect(await queue.stats(34)).toMatchObject({ ready: 0, active: 0, acks: ids.length });
    console.info(`postgres crash: ${lost} of ${before.size} reservations lost to the crash`);
  });
});
