import { describe, expect, it } from 'vitest';
import { Receipts } from '../../src/server/receipts.js';
import { operationFromWire, type WireVerifier } from '../../src/wire/index.js';

/**
 * An operation is refused for its first receipt that is not genuine: the receipts after it are
 * read for their form only, not verified (an HMAC each), whatever their number.
 */
const receipts = new Receipts('a-secret-of-at-least-32-characters!!');
const genuine = receipts.issue('q', 7, 'job-7');
const other = receipts.issue('q', 8, 'job-8');
// The same receipt with one character of its MAC changed: well formed, not signed here.
const forged = `${genuine.slice(0, 20)}${genuine[20] === 'A' ? 'B' : 'A'}${genuine.slice(21)}`;

/** A verifier of queue q that counts the receipts it was asked to verify. */
function counting(): { verifier: WireVerifier; verified: string[] } {
  const wire = receipts.forQueue('q');
  const verified: string[] = [];
  return {
    verified,
    verifier: {
      token: (receipt) => {
        verified.push(receipt);
        return wire.token(receipt);
      },
      sessionId: wire.sessionId,
    },
  };
}

function refusal(input: unknown, verifier: WireVerifier): { code?: string; message: string } {
  try {
    operationFromWire(input, verifier);
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('expected a refusal');
}

describe('an ack with a forged receipt', () => {
  it('verifies no receipt after the first forged one, and is refused as INVALID_RECEIPT', () => {
    const { verifier, verified } = counting();
    const error = refusal(
      { type: 'ack', receipts: [genuine, forged, ...Array.from({ length: 500 }, () => forged)] },
      verifier,
    );
    expect(error.code).toBe('INVALID_RECEIPT');
    expect(verified).toEqual([genuine, forged]);
  });

  it('is refused as INVALID_ARGUMENT for a later receipt that is no receipt at all', () => {
    const { verifier } = counting();
    const error = refusal({ type: 'ack', receipts: [forged, genuine, 'a+b/c='] }, verifier);
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('receipts[2]');
  });

  it('reads genuine receipts as their tokens', () => {
    const { verifier } = counting();
    expect(operationFromWire({ type: 'ack', receipts: [genuine, other] }, verifier)).toEqual({
      type: 'ack',
      tokens: [7, 8],
    });
  });
});
