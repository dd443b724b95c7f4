/** U+FEFF, the byte order mark (EF BB BF in UTF-8). */
const BOM = '\uFEFF';

/** The byte of '\n': never part of a longer UTF-8 sequence, so lines can be cut on bytes. */
const NEWLINE = 0x0a;

/**
 * 256 MiB, the largest request body `leaseq serve` can be set to take (--max-body-bytes): a
 * longer line is no job any server of it publishes (and near V8's longest string).
 */
export const MAX_LINE_BYTES = 256 * 1024 * 1024;

export interface Line {
  /** 1-based. */
  number: number;
  text: string;
}

/** A line that cannot be a job whatever it says: not UTF-8, or too long. Nothing after is read. */
export class LineError extends Error {
  constructor(
    /** 1-based. */
    readonly line: number,
    /** "is not well-formed UTF-8" */
    readonly problem: string,
  ) {
    super(`line ${line} ${problem}`);
  }
}

export interface ReadLinesOptions {
  /** Hears how many bytes each chunk had, for a progress bar. */
  onBytes?: (bytes: number) => void;
  /**
   * When it aborts, no further line is given, even one already read, nor anything more read:
   * a wait for the next chunk ends at once, and a source with `destroy` (a stream) is
   * destroyed. The generator then returns the number of the first line not given.
   */
  signal?: AbortSignal;
  /** Longer lines are refused with a LineError. Default MAX_LINE_BYTES. */
  maxLineBytes?: number;
}

const STOPPED = Symbol('stopped');

/**
 * The lines of a stream of chunks (UTF-8 split anywhere), blank lines skipped, a byte order
 * mark at the start dropped. Bytes that are not UTF-8 are refused (a LineError naming the
 * line), never read as U+FFFD: two ids that differ there would be one. Linear in the input:
 * each chunk is looked through once, and a line's pieces are joined once, when it ends.
 * Returns, when stopped by `signal`, the number of the first line not given; else undefined.
 */
export async function* readLines(
  chunks: AsyncIterable<string | Buffer>,
  options: ReadLinesOptions = {},
): AsyncGenerator<Line, number | undefined> {
  const { onBytes = () => {}, signal, maxLineBytes = MAX_LINE_BYTES } = options;
  // ignoreBOM: a mark is dropped at the start of the input only, by hand; fatal: never U+FFFD.
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const iterator = chunks[Symbol.asyncIterator]();
  /** The pieces of the line begun and not ended yet, and their bytes. */
  let pending: Buffer[] = [];
  /** The first half of a surrogate pair that ended a string chunk. */
  let carried = '';
  let pendingBytes = 0;
  /** Lines ended so far (blank ones too). */
  let number = 0;
  let finished = false;
  const tooLong = (line: number) =>
    new LineError(line, `is longer than ${maxLineBytes} bytes: no server takes it`);
  // Editors on Windows save UTF-8 with a mark first: not JSON, and not part of line 1.
  const withoutMark = (text: string, line: number) =>
    line === 1 && text.startsWith(BOM) ? text.slice(BOM.length) : text;
  const decode = (bytes: Uint8Array, line: number): string => {
    try {
      return withoutMark(decoder.decode(bytes), line);
    } catch {
      throw new LineError(line, 'is not well-formed UTF-8');
    }
  };
  try {
    for (;;) {
      const next = await nextUnlessStopped(iterator, signal);
      if (next === STOPPED) {
        // The wait for input may never end (an idle pipe): give the source up, unawaited.
        finished = true;
        (chunks as { destroy?: () => void }).destroy?.();
        return number + 1;
      }
      if (next.done === true) break;
      let chunk: Buffer;
      if (typeof next.value === 'string') {
        // A character split between two string chunks is joined before it is encoded.
        let text = carried + next.value;
        carried = '';
        if (isHighSurrogate(text.charCodeAt(text.length - 1))) {
          carried = text.slice(-1);
          text = text.slice(0, -1);
        }
        chunk = stringBytes(text);
      } else chunk = next.value;
      onBytes(chunk.length);
      const last = chunk.lastIndexOf(NEWLINE);
      let start = 0;
      if (last !== -1 && pending.length > 0) {
        // The line begun in earlier chunks ends in this one: its pieces joined once.
        const end = chunk.indexOf(NEWLINE);
        number += 1;
        if (pendingBytes + end > maxLineBytes) throw tooLong(number);
        const bytes = Buffer.concat([...pending, chunk.subarray(0, end)]);
        pending = [];
        pendingBytes = 0;
        start = end + 1;
        if (signal?.aborted) return number;
        const text = decode(bytes, number);
        if (text.trim() !== '') yield { number, text };
      }
      if (start <= last) {
        // The lines that begin and end in this chunk: decoded at once when all are well-formed
        // (and short enough); else one by one, so that those before a refused one are given.
        const whole = chunk.subarray(start, last);
        let texts: string[] | undefined;
        if (whole.length <= maxLineBytes) {
          try {
            texts = decoder.decode(whole).split('\n');
          } catch {}
        }
        if (texts !== undefined) {
          for (const text of texts) {
            number += 1;
            if (signal?.aborted) return number;
            if (text.trim() !== '') yield { number, text: withoutMark(text, number) };
          }
        } else {
          for (let end = chunk.indexOf(NEWLINE, start); end !== -1 && end <= last; ) {
            number += 1;
            if (end - start > maxLineBytes) throw tooLong(number);
            if (signal?.aborted) return number;
            const text = decode(chunk.subarray(start, end), number);
            start = end + 1;
            end = chunk.indexOf(NEWLINE, start);
            if (text.trim() !== '') yield { number, text };
          }
        }
      }
      if (last + 1 < chunk.length) {
        pending.push(chunk.subarray(last + 1));
        pendingBytes += chunk.length - (last + 1);
        if (pendingBytes > maxLineBytes) throw tooLong(number + 1);
      }
    }
    finished = true;
    if (carried !== '') {
      pending.push(stringBytes(carried));
      pendingBytes += 1;
    }
    if (pending.length > 0) {
      if (signal?.aborted) return number + 1;
      const text = decode(Buffer.concat(pending), number + 1);
      if (text.trim() !== '') yield { number: number + 1, text };
    }
    return undefined;
  } finally {
    // Left early (refused, or the caller stopped iterating): let the source go, as for-await does.
    if (!finished) await iterator.return?.();
  }
}

/** The iterator's next result, or STOPPED as soon as `signal` aborts (the next left pending). */
function nextUnlessStopped<T>(
  iterator: AsyncIterator<T>,
  signal: AbortSignal | undefined,
): Promise<IteratorResult<T> | typeof STOPPED> {
  if (signal === undefined) return iterator.next();
  if (signal.aborted) return Promise.resolve(STOPPED);
  const next = iterator.next();
  return new Promise((resolve, reject) => {
    const stop = () => resolve(STOPPED);
    signal.addEventListener('abort', stop, { once: true });
    // A rejection after a stop is handled here, and not heard by anyone.
    next.then(
      (result) => {
        signal.removeEventListener('abort', stop);
        resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', stop);
        reject(error);
      },
    );
  });
}

const NOT_UTF8 = Buffer.from([0xff]);

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * A string as UTF-8, but for a lone surrogate (no character: a string chunk cut inside a pair
 * and never joined), which becomes a byte that is no UTF-8, so that its line is refused as
 * input that is not UTF-8 is, rather than read as U+FFFD.
 */
function stringBytes(text: string): Buffer {
  if (!/[\uD800-\uDFFF]/.test(text)) return Buffer.from(text);
  const parts: Buffer[] = [];
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0xd800 || code > 0xdfff) continue;
    const after = text.charCodeAt(index + 1);
    if (isHighSurrogate(code) && after >= 0xdc00 && after <= 0xdfff) {
      index += 1;
      continue;
    }
    parts.push(Buffer.from(text.slice(start, index)), NOT_UTF8);
    start = index + 1;
  }
  parts.push(Buffer.from(text.slice(start)));
  return Buffer.concat(parts);
}
