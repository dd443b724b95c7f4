import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Operation,
  type Outcome,
  type PublishInput,
  parseOperation,
  type QueueOptions,
} from '../../src/core/index.js';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** How many random histories each engine runs (LEASEQ_MODEL_RUNS widens it). */
const RUNS = Number(process.env.LEASEQ_MODEL_RUNS ?? 12);

const job: fc.Arbitrary<PublishInput> = fc.record(
  {
    id: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
    payload: fc.oneof(fc.integer(), fc.constant({ n: 1 })),
    delay: fc.constantFrom(0, 3),
    priority: fc.constantFrom(0, 2),
    group: fc.constantFrom('g', 'h'),
  },
  { requiredKeys: [] },
);

/** A publish, now and then one the queue refuses whole (a payload JSON cannot carry, R5). */
const publish: fc.Arbitrary<Operation> = fc
  .oneof(
    { weight: 9, arbitrary: fc.array(job, { minLength: 1, maxLength: 3 }) },
    { weight: 1, arbitrary: fc.constant([{ id: 'x', payload: 10n } as unknown as PublishInput]) },
  )
  .map((jobs) => parseOperation({ type: 'publish', jobs }));

/** Calls made at once, each a batch of publishes alone (which merge with their neighbours). */
const calls = fc.array(fc.array(publish, { minLength: 1, maxLength: 3 }), {
  minLength: 1,
  maxLength: 6,
});

const queueOptions = fc.constantFrom<QueueOptions[]>(
  { visibility: 10 },
  { visibility: 10, maxLength: 3 },
  { visibility: 10, maxLength: 3, overflow: 'dead-letter-oldest' },
  { visibility: 10, retention: 5 },
);

/** What an outcome says, comparable across engines: the value, or the error's code. */
function shown(outcome: Outcome): unknown {
  return outcome.ok ? outcome.value : { code: (outcome.error as { code?: unknown }).code };
}

async function state(queue: QueueHandle): Promise<unknown> {
  const ids = ['a', 'b', 'c', 'd', 'e', 'x', 'job-1', 'job-2'];
  return {
    inspect: await queue.inspect(),
    jobs: await Promise.all(ids.map((id) => queue.job(id))),
    stats: await queue.stats(1),
  };
}

describeEngines(engines, (h) => {
  describe('R4 R5 R20 publishes of calls made at once', () => {
    it('R4 R5 R20 give each call the answers and the queue the state of the calls one after the other', async () => {
      let reference: Engine | undefined;
      try {
        reference = await openEngine('memory:');
        const core = reference;
        let round = 0;
        await fc.assert(
          fc.asyncProperty(calls, queueOptions, async (made, options) => {
            round += 1;
            const name = h.deleteAfter(h.queueName(`merge${round}`));
            const queue = await h.engine().queue(name, options);
            const alone = await core.queue(`merge${round}`, options);
            const answers = await Promise.all(made.map((call) => queue.execute(1, call)));
            const expected: Outcome[][] = [];
            for (const call of made) expected.push(await alone.execute(1, call));
            expect(answers.map((outcomes) => outcomes.map(shown))).toEqual(
              expected.map((outcomes) => outcomes.map(shown)),
            );
            expect(await state(queue)).toEqual(await state(alone));
          }),
          { numRuns: RUNS },
        );
      } finally {
        await reference?.close();
      }
    });
  });
});
