import { StringDecoder } from 'node:string_decoder';

/** U+FEFF, the byte order mark (EF BB BF in UTF-8). */
const BOM = '\uFEFF';

export interface Line {
  /** 1-based. */
  number: number;
  text: string;
}

/**
 * The lines of a stream of chunks (UTF-8 split anywhere), blank lines skipped, a byte order
 * mark at the start dropped. `onBytes` hears how many bytes each chunk had, for a progress bar.
 */
export async function* readLines(
  chunks: AsyncIterable<string | Buffer>,
  onBytes: (bytes: number) => void = () => {},
): AsyncGenerator<Line> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let number = 0;
  let started = false;
  for await (const chunk of chunks) {
    onBytes(typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length);
    pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
    // Editors on Windows save UTF-8 with a mark first: not JSON, and not part of line 1.
    if (!started && pending !== '') {
      started = true;
      if (pending.startsWith(BOM)) pending = pending.slice(BOM.length);
    }
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
