import { afterAll, describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../src/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

// R6, R7: a token is never handed out twice by a queue name, even when the queue was deleted
// and created again; an old token or session id can never name the new queue's deliveries.
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

describe.each(factories)('a re-created queue on $name', (factory) => {
  it('R6 continues tokens and session numbers, so old ones stay stale', async () => {
    const engine = await factory.open();
    const name = queueName('recreate');
    const first = await engine.queue(name);
    const session = await first.openSession(1);
    await first.publish(1, { id: 'a' });
    const [old] = await first.reserve(1, { session });
    expect(old?.token).toBe(1);
    expect(await engine.deleteQueue(name)).toBe(true);

    const second = await engine.queue(name);
    await second.publish(2, { id: 'b' });
    const [fresh] = await second.reserve(2);
    expect(fresh?.token).toBe(2);
    expect(await second.ack(2, old?.token ?? 0)).toBe(false);
    await expect(second.heartbeat(2, session)).rejects.toBeInstanceOf(SessionClosedError);
    expect(await second.openSession(2)).not.toBe(session);
    expect((await second.inspect()).active.map((entry) => entry.token)).toEqual([2]);
    await engine.deleteQueue(name);
    await engine.close();
  });
});
