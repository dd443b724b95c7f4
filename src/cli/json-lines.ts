import { StringDecoder } from 'node:string_decoder';

export interface Line {
  /** 1-based. */
  number: number;
  text: string;
}

/**
 * The lines of a stream of chunks (UTF-8 split anywhere), blank lines skipped. `onBytes` hears
 * how many bytes each chunk had, for a progress bar.
 */
export async function* readLines(
  chunks: AsyncIterable<string | Buffer>,
  onBytes: (bytes: number) => void = () => {},
): AsyncGenerator<Line> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let number = 0;
  for await (const chunk of chunks) {
    onBytes(typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length);
    pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const text of parts) {
      number += 1;
      if (text.trim() !== '') yield { number, text };
    }
  }
  pending += decoder.end();
  if (pending.trim() !== '') yield { number: number + 1, text: pending };
}
