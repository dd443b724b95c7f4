import { afterAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_PAGE_CHARS } from '../../src/core/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

/**
 * R34: a page of dead letters read with their payloads ends at the job whose payload text
 * reaches DEAD_LETTER_PAGE_CHARS, whatever its `limit`; `next` then starts the following page.
 * Read whole, a page of 1,000 dead jobs of 100 KB was 100 MB read, parsed and sent in one piece
 * (a server held its event loop for seconds), and one of 600 jobs of 1 MB was longer than a
 * JavaScript string can be (a server answered `INTERNAL` for `RangeError: Invalid string
 * length`). Every engine ends the page at the same job, as the memory engine does.
 */
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

/** Four of these pass the bound, three do not: each one's JSON text is a quarter of it and more. */
const LARGE = DEAD_LETTER_PAGE_CHARS / 4 + 1;
const IDS = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];

describe.each(factories)('R34 a page of large dead letters on $name', (factory) => {
  it('ends at the job whose payload text reaches the bound, and goes on after it', async () => {
    const engine = await factory.open();
    const name = queueName('dead-page-chars');
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      // a, b, c and d large; e, f and g small.
      await queue.publishBatch(
        1,
        IDS.map((id, index) => ({ id, payload: index < 4 ? id.repeat(LARGE) : { id } })),
      );
      for (const delivery of await queue.reserve(1, { max: IDS.length })) {
        await queue.nack(1, delivery.token, { requeue: false, reason: 'bad' });
      }
      const ids = (page: { deadLetters: { id: string }[] }) =>
        page.deadLetters.map((dead) => dead.id);

      // The fourth large one passes the bound: it is the page's last.
      const first = await queue.deadLetterPage({ limit: 100 });
      expect(ids(first)).toEqual(['a', 'b', 'c', 'd']);
      expect(first.deadLetters[3]?.payload).toBe('d'.repeat(LARGE));
      expect(first.next).toBeDefined();
      const second = await queue.deadLetterPage({ limit: 100, after: first.next as string });
      expect(ids(second)).toEqual(['e', 'f', 'g']);
      expect(second.deadLetters[2]?.payload).toEqual({ id: 'g' });
      expect(second.next).toBeUndefined();

      // A limit reached first ends the page as before.
      const two = await queue.deadLetterPage({ limit: 2 });
      expect(ids(two)).toEqual(['a', 'b']);
      expect(ids(await queue.deadLetterPage({ limit: 100, after: two.next as string }))).toEqual([
        'c',
        'd',
        'e',
        'f',
        'g',
      ]);
      // Without payloads nothing is counted: one page holds them all.
      const bare = await queue.deadLetterPage({ limit: 100, payloads: false });
      expect(ids(bare)).toEqual(IDS);
      expect(bare.next).toBeUndefined();
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
