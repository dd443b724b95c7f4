import {
  createHmac,
  createSecretKey,
  type KeyObject,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import { leaseAge } from '../broker/lease-age.js';
import { ValidationError } from '../core/index.js';
import type { WireSigner, WireVerifier } from '../wire/index.js';
import { ServerError } from './errors.js';

const RECEIPT_VERSION = 1;
const SESSION_VERSION = 2;
const MAC_BYTES = 32;
/** version (1) + token (8, big-endian) + MAC (32), then the job id in UTF-8. */
const RECEIPT_HEADER_BYTES = 1 + 8 + MAC_BYTES;
/** version (1) + MAC (32), then the session id in UTF-8. */
const SESSION_HEADER_BYTES = 1 + MAC_BYTES;
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
/**
 * Receipts this process issued that are verified from memory, newest kept: most come back
 * (ack, extend) while they are among the last this many. ~220 bytes each.
 */
const REMEMBERED_RECEIPTS = 16_384;
/** Queues whose receipt MAC prefix is kept; past it, the prefixes are made again. */
const PREFIXES_KEPT = 1024;

/** What a genuine receipt names: one delivery of one job in one queue. */
export interface ReceiptClaim {
  token: number;
  id: string;
}

/**
 * Receipts wrap delivery tokens at the HTTP edge: base64url of the token, the job id and an
 * HMAC-SHA256 over (queue, token, id) with the server's secret. Only this server (or one sharing
 * its secret) can make one, and one queue's receipt is refused by every other queue. Session
 * handles are signed the same way, so a guessed session id cannot be used either.
 */
export class Receipts {
  /** The first signs; every one verifies (the one before a rotation, during its grace period). */
  private keys: readonly Buffer[];
  /** keys[0] as a key object: a MAC made with it skips taking the key's bytes in again. */
  private signingKey: KeyObject;
  /** Per queue, the JSON that starts the MAC input of its receipts (see receiptMac). */
  private readonly receiptPrefixes = new Map<string, string>();
  /**
   * Receipts issued here, by their text: verifying one of them is a lookup, not an HMAC. Only
   * an exact copy of a receipt this process made (and so signed) is found; anything else is
   * checked in full. Emptied when the keys change, so a retired key's receipts are refused.
   */
  private readonly issued = new Map<string, { queue: string; claim: ReceiptClaim }>();
  /** The remembered receipts in the order they were issued, a ring: the oldest is overwritten. */
  private readonly issuedOrder: (string | undefined)[] = new Array(REMEMBERED_RECEIPTS);
  private nextIssued = 0;

  constructor(secret: string | Buffer) {
    this.keys = [toKey(secret)];
    this.signingKey = createSecretKey(this.keys[0] as Buffer);
  }

  /** Signs with `secrets[0]` from now on and accepts receipts signed with any of them. */
  useKeys(secrets: readonly (string | Buffer)[]): void {
    if (secrets.length === 0) throw new Error('Receipts need at least one secret');
    this.keys = secrets.map(toKey);
    this.signingKey = createSecretKey(this.keys[0] as Buffer);
    this.issued.clear();
    this.issuedOrder.fill(undefined);
  }

  /** A fresh random secret, for a server started without one. */
  static randomSecret(): Buffer {
    return randomBytes(32);
  }

  issue(queue: string, token: number, id: string): string {
    // One buffer, written in place: a receipt is made for every delivery.
    const bytes = Buffer.allocUnsafe(RECEIPT_HEADER_BYTES + Buffer.byteLength(id, 'utf8'));
    bytes[0] = RECEIPT_VERSION;
    bytes.writeUInt32BE(Math.floor(token / 2 ** 32), 1);
    bytes.writeUInt32BE(token >>> 0, 5);
    this.receiptMac(queue, token, id).copy(bytes, 9);
    bytes.write(id, RECEIPT_HEADER_BYTES, 'utf8');
    const receipt = bytes.toString('base64url');
    // A ring, not the map's own order: taking a map's first key walks the holes of every key
    // deleted before it, which grows with the map's churn.
    const oldest = this.issuedOrder[this.nextIssued];
    if (oldest !== undefined) this.issued.delete(oldest);
    this.issuedOrder[this.nextIssued] = receipt;
    this.nextIssued = (this.nextIssued + 1) % REMEMBERED_RECEIPTS;
    this.issued.set(receipt, { queue, claim: { token, id } });
    return receipt;
  }

  /** The delivery a receipt names, or an INVALID_RECEIPT error when it was not made here for `queue`. */
  verify(queue: string, receipt: string): ReceiptClaim {
    const known = this.issued.get(receipt);
    if (known !== undefined && known.queue === queue) return { ...known.claim };
    const bytes = decodeBase64url(receipt);
    const claim = bytes.length > RECEIPT_HEADER_BYTES ? decodeReceipt(bytes) : undefined;
    const given = bytes.subarray(9, RECEIPT_HEADER_BYTES);
    if (
      claim === undefined ||
      !this.signedHere(['receipt', queue, String(claim.token), claim.id], given)
    ) {
      throw new ServerError(
        'INVALID_RECEIPT',
        `the receipt was not issued for queue ${queue} under this server's secrets (one issued before a secret rotation is refused once its grace period ended)`,
      );
    }
    return claim;
  }

  issueSession(queue: string, sessionId: string): string {
    const header = Buffer.alloc(SESSION_HEADER_BYTES);
    header.writeUInt8(SESSION_VERSION, 0);
    this.mac(['session', queue, sessionId]).copy(header, 1);
    return Buffer.concat([header, Buffer.from(sessionId, 'utf8')]).toString('base64url');
  }

  /** The session id a handle names; an unknown handle is an unknown session, as in the core. */
  verifySession(queue: string, handle: string): string {
    const bytes = decodeBase64url(handle);
    const sessionId =
      bytes.length > SESSION_HEADER_BYTES && bytes[0] === SESSION_VERSION
        ? decodeUtf8(bytes.subarray(SESSION_HEADER_BYTES))
        : undefined;
    if (
      sessionId === undefined ||
      !this.signedHere(['session', queue, sessionId], bytes.subarray(1, SESSION_HEADER_BYTES))
    ) {
      throw new ValidationError(`unknown session for queue ${queue}`);
    }
    return sessionId;
  }

  /** What the wire module needs to wrap and unwrap one queue's tokens and sessions. */
  forQueue(queue: string): WireSigner & WireVerifier {
    return {
      receipt: (token, jobId) => this.issue(queue, token, jobId),
      sessionHandle: (sessionId) => this.issueSession(queue, sessionId),
      // As the broker noted it: how long the reservation took to answer.
      leaseAge: (delivery) => leaseAge(delivery),
      token: (receipt) => this.verify(queue, receipt).token,
      sessionId: (handle) => this.verifySession(queue, handle),
    };
  }

  /** JSON of the fields keeps them unambiguous whatever characters a job id holds. */
  private mac(fields: readonly string[], key: KeyObject | Buffer = this.signingKey): Buffer {
    return createHmac('sha256', key).update(JSON.stringify(fields)).digest();
  }

  /**
   * `mac(['receipt', queue, String(token), id])`, with the JSON of its first two fields made
   * once per queue: a receipt is made for every delivery.
   */
  private receiptMac(queue: string, token: number, id: string): Buffer {
    let prefix = this.receiptPrefixes.get(queue);
    if (prefix === undefined) {
      if (this.receiptPrefixes.size >= PREFIXES_KEPT) this.receiptPrefixes.clear();
      prefix = `${JSON.stringify(['receipt', queue]).slice(0, -1)},"`;
      this.receiptPrefixes.set(queue, prefix);
    }
    // A token is a safe integer: its digits need no escaping.
    return createHmac('sha256', this.signingKey)
      .update(`${prefix}${token}",${JSON.stringify(id)}]`)
      .digest();
  }

  /** True when `given` is the MAC of `fields` under one of the accepted keys. */
  private signedHere(fields: readonly string[], given: Buffer): boolean {
    return this.keys.some((key) => sameBytes(this.mac(fields, key), given));
  }
}

/** Only the canonical spelling decodes; anything else decodes to nothing. */
function decodeBase64url(text: string): Buffer {
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : Buffer.alloc(0);
}

function decodeReceipt(bytes: Buffer): ReceiptClaim | undefined {
  if (bytes[0] !== RECEIPT_VERSION) return undefined;
  const token = bytes.readBigUInt64BE(1);
  if (token < 1n || token > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  const id = decodeUtf8(bytes.subarray(RECEIPT_HEADER_BYTES));
  return id === undefined ? undefined : { token: Number(token), id };
}

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

function toKey(secret: string | Buffer): Buffer {
  return typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret;
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
