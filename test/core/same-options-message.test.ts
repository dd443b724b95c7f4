import { describe, expect, it } from 'vitest';
import { ConflictError } from '../../src/core/index.js';
import { checkSameOptions } from '../../src/core/queue-options.js';
import { resolveQueueOptions } from '../../src/core/validate.js';

// A queue made again with other options is refused (CONFLICT), the message naming each option
// as stored and as asked. An option shown only when set (paused, deadLetterQueue, maxLength …)
// and not set is said to be unset, not "undefined".
describe('checkSameOptions', () => {
  it('names an option not set as unset', () => {
    const stored = resolveQueueOptions({ visibility: 5000 });
    let refused: unknown;
    try {
      checkSameOptions('orders', stored, {
        paused: true,
        deadLetterQueue: 'dlq',
        visibility: 6000,
      });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ConflictError);
    expect((refused as Error).message).toBe(
      'queue orders exists with other options (paused: stored unset, asked true; deadLetterQueue: stored unset, asked dlq; visibility: stored 5000, asked 6000); update the queue to change them (updateQueue, PATCH /v1/queues/orders, leaseq queue update, leaseq queue pause orders)',
    );
  });

  it('names the command that pauses or resumes where paused is all that differs', () => {
    const refusal = (stored: boolean | undefined, paused: boolean) => {
      try {
        checkSameOptions('orders', resolveQueueOptions({ paused: stored }), { paused });
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(refusal(undefined, true)).toBeInstanceOf(ConflictError);
    expect((refusal(undefined, true) as Error).message).toMatch(
      /\(updateQueue, PATCH \/v1\/queues\/orders, leaseq queue pause orders\)$/,
    );
    expect((refusal(true, false) as Error).message).toMatch(
      /\(updateQueue, PATCH \/v1\/queues\/orders, leaseq queue resume orders\)$/,
    );
    expect(refusal(true, true)).toBeUndefined();
  });
});
