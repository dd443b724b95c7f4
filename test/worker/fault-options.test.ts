import { afterEach, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { Harness } from '../../src/testing/index.js';

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

it('the faults refuse a misspelt mode, a bad count or an unknown option, and arm nothing', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 1000 } });
  harnesses.push(h);
  const consumer = h.process(async (_job, ctx) => {
    await ctx.extend(1000);
  });
  const { faults } = consumer;
  const refused: [() => void, string][] = [
    [
      () => faults.failRenewals({ mode: 'refuse' as never }),
      "failRenewals: mode must be one of 'refused', 'error', 'hang', 'late', got \"refuse\"",
    ],
    [
      () => faults.failRenewals({ count: Number.NaN }),
      'failRenewals: count must be a positive integer or Infinity, got NaN',
    ],
    [
      () => faults.failRenewals({ count: -1 }),
      'failRenewals: count must be a positive integer or Infinity, got -1',
    ],
    [() => faults.failRenewals({ times: 1 } as never), 'failRenewals: unknown option "times"'],
    [
      () => faults.failHeartbeats({ mode: 'refused' as never }),
      "failHeartbeats: mode must be one of 'error', 'hang', 'late', got \"refused\"",
    ],
    [
      () => faults.failHeartbeats(null as never),
      'failHeartbeats: options must be an object, got null',
    ],
    [
      () => faults.loseNextAck({ applied: 'yes' } as never),
      'loseNextAck: applied must be a boolean, got "yes"',
    ],
    [() => faults.loseNextAck({ aplied: true } as never), 'loseNextAck: unknown option "aplied"'],
  ];
  for (const [arm, message] of refused) {
    expect(arm).toThrow(ValidationError);
    expect(arm).toThrow(message);
  }
  // None of them was armed: the extend and the ack reach the queue.
  await h.queue.publish({ id: 'a' });
  await consumer.worker.runOnce();
  expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
  expect(consumer.faults.calls.map((call) => [call.op, call.fate])).toEqual([
    ['receive', 'sent'],
    ['extend', 'sent'],
    ['ack', 'sent'],
  ]);
  // What they take still arms them.
  faults.failRenewals({ mode: 'error', count: 1 });
  faults.failRenewals({ count: Number.POSITIVE_INFINITY });
  faults.failHeartbeats({ mode: 'late', count: 2 });
  faults.loseNextAck({ applied: true });
  faults.heal();
});
