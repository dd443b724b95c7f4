import { afterAll, describe, expect, it } from 'vitest';
import { type ManualClock, SessionClosedError } from '../../src/index.js';
import { engineFactories } from '../conformance/engines.js';
import { countedQueue, settle } from './looks.js';

// R16: a session's end makes the receives waiting in it look, to learn so, and offers what it
// released to the others in its own step: the receives of other sessions need not look. Each
// of a thousand receives waiting in a session of its own looked at every session's end: 200
// closes took 91 s on the memory engine (1,000 looks each), 50 took 7.7 s on SQLite.
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

/** Resolves once `count` receivers sleep on `clock`, i.e. they are parked. */
async function parked(clock: ManualClock, count: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (clock.waiting < count && Date.now() < deadline) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(clock.waiting).toBe(count);
}

describe.each(factories)('receives parked in sessions of their own on $name', (factory) => {
  const setup = () => countedQueue(factory, 'session-end-looks', 100_000);

  it('R16 a session closed with 30 others parked has its own receive look, and none of theirs', async () => {
    const { clock, queue, count, done } = await setup();
    const others: string[] = [];
    for (let i = 0; i < 30; i++) others.push(await queue.openSession());
    const closing = await queue.openSession();
    await queue.publish({ id: 'a' });
    expect((await queue.receive({ session: closing })).map((delivery) => delivery.id)).toEqual([
      'a',
    ]);
    const refused = queue.receive({ session: closing, wait: 20_000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await parked(clock, 1);
    const receiving = others.map((session) => queue.receive({ session, wait: 20_000 }));
    await parked(clock, 31);
    await settle();
    count.looks = 0;
    // The close releases `a`, handed to the receive that waited longest in its step.
    expect(await queue.closeSession(closing)).toBe(1);
    expect(await refused).toBeInstanceOf(SessionClosedError);
    expect((await receiving[0])?.map((delivery) => delivery.id)).toEqual(['a']);
    await settle();
    // The closed session's receive looked (and was refused); no other looked.
    expect(count.looks).toBe(1);
    expect(clock.waiting).toBe(29);
    expect(clock.now()).toBe(1_000);
    await done();
  });
});
