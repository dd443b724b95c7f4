import { promisify } from 'node:util';
import { constants, gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);

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
 * The body to send and its Content-Encoding: gzipped when the request takes gzip and the body
 * is large enough to gain from it. Compressed off the event loop's thread (zlib's pool).
 */
export async function encodeForRequest(
  body: string,
  acceptEncoding: string | string[] | undefined,
): Promise<{ body: string | Buffer; encoding?: 'gzip' }> {
  if (Buffer.byteLength(body, 'utf8') < GZIP_FROM_BYTES || !acceptsGzip(acceptEncoding)) {
    return { body };
  }
  // The fastest level: metrics text shrinks about 17× at it, hardly more at the default's
  // twice the time.
  return { body: await gzipAsync(body, { level: constants.Z_BEST_SPEED }), encoding: 'gzip' };
}
