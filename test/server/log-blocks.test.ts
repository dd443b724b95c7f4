import { describe, expect, it } from 'vitest';
import { LogBlocks } from '../../src/server/log-blocks.js';

describe('LogBlocks', () => {
  it('writes lines once a block is full, in order, and the rest when flushed', () => {
    const writes: string[] = [];
    const log = new LogBlocks({ write: (text: string) => writes.push(text) }, 20);
    log.write('0123456789\n');
    expect(writes).toEqual([]);
    log.write('abcdefghij\n');
    expect(writes).toEqual(['0123456789\nabcdefghij\n']);
    log.write('tail\n');
    let flushed: unknown = 'not called';
    log.flush((error) => {
      flushed = error;
    });
    expect(flushed).toBeUndefined();
    expect(writes).toEqual(['0123456789\nabcdefghij\n', 'tail\n']);
    log.flush();
    expect(writes).toHaveLength(2);
  });

  it("hands a failed write's error to the flush callback instead of throwing", () => {
    const log = new LogBlocks(
      {
        write: () => {
          throw new Error('EPIPE');
        },
      },
      1024,
    );
    log.write('line\n');
    let flushed: Error | undefined;
    expect(() =>
      log.flush((error) => {
        flushed = error;
      }),
    ).not.toThrow();
    expect(flushed?.message).toBe('EPIPE');
  });
});
