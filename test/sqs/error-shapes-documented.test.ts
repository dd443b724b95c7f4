import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SQS_ERROR_SHAPES, SqsError } from '../../src/server/sqs/errors.js';

const DOC = readFileSync(new URL('../../docs/sqs.md', import.meta.url), 'utf8');

describe('docs/sqs.md names every SQS error shape the endpoint answers with', () => {
  it('each shape is in a row of the errors table with its status', () => {
    expect(SQS_ERROR_SHAPES.length).toBeGreaterThan(20);
    for (const shape of SQS_ERROR_SHAPES) {
      const { status } = new SqsError(shape, '');
      const row = new RegExp(`^\\|[^\\n]*\`${shape}\`[^\\n]*\\| ${status} +\\|`, 'm');
      expect(DOC, `${shape} ${status}`).toMatch(row);
    }
  });
});
