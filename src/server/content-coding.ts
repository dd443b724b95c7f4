import { pipeline, Readable } from 'node:stream';
import { constants, createGzip } from 'node:zlib';

/** Bodies smaller than this go as they are: gzip's header and the work would not pay. */
export const GZIP_FROM_BYTES = 1024;

/**
 * Whether an Accept-Encoding header takes gzip (RFC 9110 §12.5.3): `gzip` (or `x-gzip`) listed
 * with a weight above 0, or `*` above 0 with gzip not listed. `gzip;q=0` refuses it.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const text = Array.isArray(header) ? header.join(',') : header;
  let any: boolean | undefined;
  for (const part of text.split(',')) {
    const [name = '', ...parameters] = part.split(';').map((piece) => piece.trim());
    const coding = name.toLowerCase();
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') continue;
    const weight = parameters.find((parameter) => /^q\s*=/i.test(parameter));
    const taken = weight === undefined || Number(weight.replace(/^q\s*=\s*/i, '')) > 0;
    if (coding === '*') any = taken;
    else return taken;
  }
  return any === true;
}

/**
 * A body made of `pieces` (their concatenation), to send and its Content-Encoding: gzipped when
 * the request takes gzip and the body is large enough to gain from it. It is a stream of the
 * pieces, so that no piece is turned into bytes before the one before it went (the event loop
 * turning between two as the connection takes them), and compressed as it goes, off the event
 * loop's thread (zlib's pool): megabytes of text encoded, or gzipped, whole took hundreds of
 * milliseconds of the event loop, every other request waiting.
 */
export function encodeForRequest(
  pieces: readonly string[],
  acceptEncoding: string | string[] | undefined,
): { body: Readable; encoding?: 'gzip' } {
  const source = Readable.from(pieces, { objectMode: false });
  let bytes = 0;
  for (const piece of pieces) {
    bytes += Buffer.byteLength(piece, 'utf8');
    if (bytes >= GZIP_FROM_BYTES) break;
  }
  if (bytes < GZIP_FROM_BYTES || !acceptsGzip(acceptEncoding)) return { body: source };
  // The fastest level: metrics text shrinks about 17× at it, hardly more at the default's
  // twice the time.
  const zipped = createGzip({ level: constants.Z_BEST_SPEED });
  // A client gone before the end destroys the answer's stream; its source goes with it.
  pipeline(source, zipped, () => {});
  return { body: zipped, encoding: 'gzip' };
}
