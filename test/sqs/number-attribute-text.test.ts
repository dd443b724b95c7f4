import { describe, expect, it } from 'vitest';
import { SqsError } from '../../src/server/sqs/errors.js';
import { parseMessageAttributes } from '../../src/server/sqs/message-attributes.js';

/**
 * A Number attribute's text is read in one pass: a send of a long run of digits that ends in
 * something else (the SQS body limit takes megabytes) is refused at once, not after the server
 * has spent minutes, its event loop blocked, backtracking over it.
 */
describe('a Number message attribute of a long run of digits', () => {
  const parse = (StringValue: string) =>
    parseMessageAttributes({ n: { DataType: 'Number', StringValue } });

  it('is refused as not a valid Number when something other than a digit ends it', () => {
    // Read with backtracking, each of these texts takes minutes (longer than a test may run);
    // read once, milliseconds.
    for (const tail of ['x', '.x', '.5.', 'e', 'e+']) {
      const text = `${'7'.repeat(200_000)}${tail}`;
      let refused: unknown;
      try {
        parse(text);
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(SqsError);
      expect((refused as SqsError).code).toBe('InvalidParameterValue');
      expect((refused as SqsError).message).toContain(
        `for message attribute 'n' is not a valid Number.`,
      );
    }
  });

  it('takes the spellings SQS takes, and refuses the others', () => {
    for (const text of ['0', '-0', '.5', '5.', '1E5', '+1', '007', '1.e5', '5.5e-3', '-.25']) {
      expect(parse(text).n).toEqual({ DataType: 'Number', StringValue: text });
    }
    for (const text of ['1.2.3', 'e5', '.', '+', '1e', '1e+', '--1', '1 ', '12a', '.e1', '0x10']) {
      expect(() => parse(text)).toThrow(/is not a valid Number\.$/);
    }
  });
});
