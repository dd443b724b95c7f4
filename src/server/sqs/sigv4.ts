import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { AccessControl, Principal } from '../auth.js';
import { SqsError } from './errors.js';

/** How far a signature's time may be from ours, as AWS allows. */
const MAX_SKEW_MS = 15 * 60 * 1000;
const AUTHORIZATION =
  /^AWS4-HMAC-SHA256\s+Credential=([^/\s,]+)\/(\d{8})\/([^/\s,]+)\/([^/\s,]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;_-]+),\s*Signature=([0-9a-f]{64})\s*$/;

export interface SignedRequest {
  method: string;
  /** The request target as received: path and query. */
  url: string;
  headers: IncomingHttpHeaders;
  /** The body as received (UTF-8). */
  body: string;
}

/**
 * The principal of a request signed with AWS Signature Version 4: access key id = the key's
 * name, secret = its key. Without configured keys every request passes (loopback only).
 */
export function authenticateSigV4(
  request: SignedRequest,
  access: AccessControl,
  nowMs: number,
): Principal {
  if (!access.enabled) return access.authenticate(undefined);
  const header = request.headers.authorization;
  if (header === undefined || header === '') {
    throw new SqsError(
      'MissingAuthenticationToken',
      'Request is missing Authentication Token: sign it with AWS Signature Version 4.',
    );
  }
  const match = AUTHORIZATION.exec(header);
  if (match === null) {
    throw new SqsError(
      'SignatureDoesNotMatch',
      'The Authorization header is not a well-formed AWS4-HMAC-SHA256 header: Credential=KEY/DATE/REGION/sqs/aws4_request, SignedHeaders=…, Signature= and 64 hex digits.',
    );
  }
  const [, keyId, date, region, service, signedHeaders, signature] = match as unknown as string[];
  const signed = (signedHeaders as string).split(';');
  checkSignedHeaders(request.headers, signed);
  const key = access.signingKey(keyId as string);
  if (key === undefined || key.secret === undefined) {
    throw new SqsError(
      'InvalidClientTokenId',
      key === undefined
        ? 'The security token included in the request is invalid.'
        : `Key ${keyId} is configured as a SHA-256 digest only and cannot sign requests.`,
    );
  }
  const amzDate = headerText(request.headers['x-amz-date']);
  checkTime(amzDate, date as string, service as string, nowMs);
  const scope = `${date}/${region}/${service}/aws4_request`;
  const canonical = canonicalRequest(request, signed);
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonical)].join('\n');
  const signingKey = [date, region, service, 'aws4_request'].reduce<Buffer | string>(
    (secret, part) => hmac(secret, part as string),
    `AWS4${key.secret}`,
  );
  const expected = hmac(signingKey, stringToSign);
  const given = Buffer.from(signature as string, 'hex');
  if (!timingSafeEqual(expected, given)) {
    throw new SqsError(
      'SignatureDoesNotMatch',
      // AWS's words, and what else a signature that does not match may come from here: a
      // proxy in front that rewrote the Host header (nginx's default) or took off a path prefix.
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method, and that no proxy on the way changed the Host header or the path, which the signature covers.',
    );
  }
  return key.principal;
}

/**
 * A signature must cover the host and every x-amz-* header sent, as AWS requires: one that
 * left out X-Amz-Target would let a captured request be replayed as another action.
 * X-Amz-Content-Sha256 may go unsigned: it is checked against the body as received.
 */
function checkSignedHeaders(headers: IncomingHttpHeaders, signed: readonly string[]): void {
  const amzHeaders = Object.keys(headers).filter(
    (name) => name.startsWith('x-amz-') && name !== 'x-amz-content-sha256',
  );
  const unsigned = ['host', ...amzHeaders].filter((name) => !signed.includes(name));
  if (unsigned.length > 0) {
    throw new SqsError(
      'SignatureDoesNotMatch',
      `SignedHeaders must include host and every x-amz-* header of the request; not signed: ${unsigned.join(', ')}.`,
    );
  }
}

function checkTime(amzDate: string, date: string, service: string, nowMs: number): void {
  const parsed = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (parsed === null || !amzDate.startsWith(date) || service !== 'sqs') {
    throw new SqsError(
      'SignatureDoesNotMatch',
      'X-Amz-Date must be a UTC time (YYYYMMDDTHHMMSSZ) of the credential scope date, for service sqs.',
    );
  }
  const [, y, mo, d, h, mi, s] = parsed.map(Number) as number[];
  const signedAt = Date.UTC(y as number, (mo as number) - 1, d, h, mi, s);
  if (Math.abs(signedAt - nowMs) > MAX_SKEW_MS) {
    throw new SqsError(
      'SignatureDoesNotMatch',
      `Signature expired: ${amzDate} is more than 15 minutes from the server's time.`,
    );
  }
}

function canonicalRequest(request: SignedRequest, signedHeaders: readonly string[]): string {
  const [path = '/', query = ''] = request.url.split('?', 2);
  const headers = signedHeaders.map(
    (name) => `${name}:${headerText(request.headers[name]).trim().replace(/\s+/g, ' ')}\n`,
  );
  // The body as received, always: a hash the request states for itself would let a captured
  // signature carry another body.
  const payloadHash = sha256Hex(request.body);
  const stated = headerText(request.headers['x-amz-content-sha256']);
  if (stated !== '' && stated.toLowerCase() !== payloadHash) {
    throw new SqsError(
      'SignatureDoesNotMatch',
      'X-Amz-Content-Sha256 is not the SHA-256 of the request body.',
    );
  }
  return [
    request.method,
    path.split('/').map(uriEscape).join('/'),
    canonicalQuery(query),
    headers.join(''),
    signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
}

function canonicalQuery(query: string): string {
  if (query === '') return '';
  return [...new URLSearchParams(query)]
    .map(([key, value]) => [uriEscape(key), uriEscape(value)])
    .sort(([a = '', b = ''], [c = '', d = '']) => (a < c ? -1 : a > c ? 1 : b < d ? -1 : 1))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
}

/** RFC 3986 encoding, as the signers use. */
function uriEscape(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

function hmac(key: Buffer | string, text: string): Buffer {
  return createHmac('sha256', key).update(text, 'utf8').digest();
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
