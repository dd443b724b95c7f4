import {
  ClockError,
  type CodedError,
  DeadLetterLoopError,
  mayHaveTakenEffect,
  type Operation,
  type OperationResults,
  type OperationType,
  type Outcome,
  parseOperation,
  ValidationError,
} from '../core/index.js';
import { deliveryToWire, type WireDelivery, type WireSigner } from './delivery.js';

/**
 * Operations on the wire: the core's operations (see `parseOperation`) with what a client
 * must not forge wrapped by the server. A delivery is named by its `receipt` (`receipts` for
 * ack), a session by its handle, and an unbounded session limit is `null`. Everything else is
 * spelled as in the core, so one parse checks both.
 */
export type WireOperation = Record<string, unknown> & {
  /** The operation's name. */
  type: string;
};

/** One answer of a batch on the wire, in the order of the operations. */
export type WireOutcome =
  | {
      /** Done. */
      ok: true;
      /** The operation's answer. */
      value: unknown;
    }
  | {
      /** Refused. */
      ok: false;
      /** Why. */
      error: WireError;
    };

/**
 * An error on the wire. A refused time (INVALID_CLOCK) also carries the queue's time, and the
 * refused `now` when it was a number, so a client rebuilds the same ClockError. The error that
 * ends a redrive, purge or moveJobs taking steps (R20) carries `doneCount`, whatever its code.
 */
export interface WireError {
  /** The error's code (`ErrorCode`). */
  code: string;
  /** For people; may be reworded. */
  message: string;
  /** INVALID_CLOCK: the queue's clock, ms. */
  queueTime?: number;
  /** INVALID_CLOCK: the refused `now`, ms, when it was a number. */
  now?: number;
  /**
   * The error ended a redrive, purge or moveJobs taking steps (R20): how many jobs the steps
   * committed before it took (0: none, nothing changed). Absent for any other error.
   */
  doneCount?: number;
  /**
   * `true`: the call may or may not have taken effect (the storage failed while its commit was
   * under way), whatever its code. Absent: it took no effect (beyond a `doneCount`).
   */
  mayHaveTakenEffect?: true;
  /**
   * CONFLICT of a dead-letter chain that would loop back (R26, a DeadLetterLoopError): the way
   * round, the queue refused first, in dead-letter order. Absent for any other error, and when
   * the key may not see every queue on the way.
   */
  chain?: string[];
}

/** Turns what the wire carries back into tokens and session ids; throws on a forged one. */
export interface WireVerifier {
  token(receipt: string): number;
  sessionId(handle: string): string;
}

/** Turns tokens and session ids into what the wire carries; the client holds the receipts. */
export interface WireWrapper {
  receipt(token: number): string;
  sessionHandle(sessionId: string): string;
}

const SESSION_LIMITS = ['prefetch', 'timeout', 'ackTimeout'] as const;

/** Where an operation names deliveries: by receipts on the wire, by tokens in the core. */
const DELIVERY_FIELDS: ReadonlyMap<unknown, { wire: string; core: string }> = new Map([
  ['ack', { wire: 'receipts', core: 'tokens' }],
  ['nack', { wire: 'receipt', core: 'token' }],
  ['extend', { wire: 'receipt', core: 'token' }],
]);

/**
 * What a receipt is on the wire, as the HTTP routes' schema has it: base64url text of 1 to
 * `MAX_RECEIPT_LENGTH` characters. Anything else is no receipt at all (INVALID_ARGUMENT), where a
 * receipt of that form that this server did not sign is INVALID_RECEIPT.
 */
export const MAX_RECEIPT_LENGTH = 2048;
const RECEIPT_TEXT = /^[A-Za-z0-9_-]+$/;

/**
 * Parses one wire operation (the server's edge): the same checks and errors as in-process.
 * Signatures come last, as on the single routes, whose schema refuses a bad field before a
 * receipt or session handle is read: an operation with a bad field is refused for that field
 * (INVALID_ARGUMENT) whatever its receipt, and a forged receipt (INVALID_RECEIPT) or session
 * handle is refused only once every field has passed, and `check` (the server's limits) too.
 */
export function operationFromWire(
  input: unknown,
  verify: WireVerifier,
  check?: (operation: Operation) => void,
): Operation {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return parseOperation(input);
  }
  const wire = input as Record<string, unknown>;
  const type = wire.type;
  const fields = copyFields(wire, DELIVERY_FIELDS.get(type)?.wire);
  const refusal: { error?: unknown } = {};
  if (typeof fields.session === 'string') {
    const handle = fields.session;
    fields.session = signed(refusal, () => verify.sessionId(handle), STAND_IN_SESSION);
  }
  switch (type) {
    case 'ack':
      fields.tokens = receiptList(wire.receipts).map((receipt, index) =>
        tokenOf(refusal, verify, receipt, index),
      );
      break;
    case 'nack':
    case 'extend': {
      // Only a receipt names a delivery on the wire: a bare token would skip its signature.
      const receipt = wire.receipt;
      if (typeof receipt !== 'string') {
        throw new ValidationError(`receipt must be a receipt string, got ${typeof receipt}`);
      }
      fields.token = tokenOf(refusal, verify, receipt);
      break;
    }
    case 'openSession':
      for (const name of SESSION_LIMITS) {
        if (fields[name] === null) fields[name] = Number.POSITIVE_INFINITY;
      }
      break;
  }
  const operation = parseOperation(fields);
  check?.(operation);
  if ('error' in refusal) throw refusal.error;
  return operation;
}

/** What stands for a receipt's token or a handle's session while the other fields are parsed. */
const STAND_IN_TOKEN = 1;
const STAND_IN_SESSION = 's';

/** What `verify` answers, or, when it refuses, `standIn`, the first refusal kept in `refusal`. */
function signed<T>(refusal: { error?: unknown }, verify: () => T, standIn: T): T {
  try {
    return verify();
  } catch (error) {
    if (!('error' in refusal)) refusal.error = error;
    return standIn;
  }
}

/**
 * The token `receipt` names, or STAND_IN_TOKEN when it is refused (the first refusal kept in
 * `refusal`). A receipt is read for its form only when it fails its signature, as one this
 * server issued is of that form: an ack of many receipts pays no pattern match for each. Once a
 * receipt or handle of the operation was refused, the others are only read for their form: the
 * operation is refused whatever they are, and each signature would cost an HMAC.
 */
function tokenOf(
  refusal: { error?: unknown },
  verify: WireVerifier,
  receipt: string,
  index?: number,
): number {
  if (!('error' in refusal)) {
    try {
      return verify.token(receipt);
    } catch (error) {
      refusal.error = error;
    }
  }
  checkReceiptText(receipt, index === undefined ? 'receipt' : `receipts[${index}]`);
  return STAND_IN_TOKEN;
}

function checkReceiptText(text: string, name: string): void {
  if (text.length === 0 || text.length > MAX_RECEIPT_LENGTH || !RECEIPT_TEXT.test(text)) {
    throw new ValidationError(
      `${name} must be a receipt as receive returned it: 1 to ${MAX_RECEIPT_LENGTH} characters of letters, digits, '-' and '_', got ${text.length === 0 ? 'an empty string' : `${text.length} characters`}`,
    );
  }
}

/**
 * Fields the client leaves off the wire at their default value, which the server reads when
 * they are absent: a server from before a field refuses it as unknown, whatever its value, so
 * an operation that does not need it still runs there (R33's `attempted`: every nack and
 * nackUpTo carries it once parsed, and servers before it refused them all). At any other value
 * it travels, and such a server refuses the operation rather than drop what it asks.
 */
const LEFT_OFF_AT_DEFAULT: ReadonlyMap<string, unknown> = new Map([['attempted', true]]);

/**
 * A copy of an operation's fields but `drop` (and, with `toWire`, those without a value and
 * those at a default that LEFT_OFF_AT_DEFAULT names).
 * Built key by key: a copy whose field is then deleted becomes a slow dictionary object, and
 * this runs for every operation that crosses the wire (an ack measured 2.1–2.7 µs that way,
 * 0.2–0.4 µs this way). A field named `__proto__` (JSON.parse makes it an own field) stays a
 * field, as a spread would keep it, so the parse reports it as unknown.
 */
function copyFields(
  source: Record<string, unknown>,
  drop: string | undefined,
  toWire = false,
): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const name of Object.keys(source)) {
    const value = source[name];
    if (
      name === drop ||
      (toWire && (value === undefined || LEFT_OFF_AT_DEFAULT.get(name) === value))
    ) {
      continue;
    }
    if (name === '__proto__') {
      Object.defineProperty(copy, name, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      copy[name] = value;
    }
  }
  return copy;
}

function receiptList(value: unknown): string[] {
  if (!Array.isArray(value) || !value.every((each) => typeof each === 'string')) {
    throw new ValidationError('receipts must be an array of receipt strings');
  }
  return value;
}

/** The wire form of a parsed operation (the client's side). */
export function operationToWire(operation: Operation, wrap: WireWrapper): WireOperation {
  const fields = copyFields(
    operation as unknown as Record<string, unknown>,
    DELIVERY_FIELDS.get(operation.type)?.core,
    true,
  );
  if (typeof fields.session === 'string') fields.session = wrap.sessionHandle(fields.session);
  switch (operation.type) {
    case 'ack':
      fields.receipts = operation.tokens.map((token) => wrap.receipt(token));
      break;
    case 'nack':
    case 'extend':
      fields.receipt = wrap.receipt(operation.token);
      break;
    case 'openSession':
      for (const name of SESSION_LIMITS) {
        if (fields[name] === Number.POSITIVE_INFINITY) fields[name] = null;
      }
      break;
  }
  return fields as WireOperation;
}

/** The wire form of one operation's value: deliveries and sessions get receipts and handles. */
export function valueToWire(
  type: OperationType,
  value: OperationResults[OperationType],
  signer: WireSigner,
): unknown {
  if (type === 'reserve') {
    return (value as OperationResults['reserve']).map((delivery) =>
      deliveryToWire(delivery, signer),
    );
  }
  if (type === 'openSession') return signer.sessionHandle(value as string);
  return value;
}

/** What a wire value of an operation type stands for, with deliveries as the wire has them. */
export type WireValue<K extends OperationType> = K extends 'reserve'
  ? WireDelivery[]
  : OperationResults[K];

/** An outcome on the wire: a typed error keeps its code and message. */
export function outcomeToWire(
  operation: Operation,
  outcome: Outcome,
  signer: WireSigner,
): WireOutcome {
  if (outcome.ok) return { ok: true, value: valueToWire(operation.type, outcome.value, signer) };
  return { ok: false, error: errorToWire(outcome.error) };
}

export function errorToWire(error: CodedError<string>, message = error.message): WireError {
  const done = { ...doneCountToWire(error), ...maybeToWire(error) };
  if (error instanceof DeadLetterLoopError) {
    return { code: error.code, message, chain: [...error.chain], ...done };
  }
  if (!(error instanceof ClockError)) return { code: error.code, message, ...done };
  const now = typeof error.now === 'number' && Number.isFinite(error.now) ? error.now : undefined;
  return {
    code: error.code,
    message,
    queueTime: error.queueTime,
    ...(now === undefined ? {} : { now }),
    ...done,
  };
}

/**
 * How many jobs a redrive, purge or moveJobs taking steps (R20) took before the error that
 * ended it: its `doneCount`, a whole number ≥ 0, in-process (the SQL engines' errors) or rebuilt
 * by the remote client; undefined for any other error.
 */
export function doneCountOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const count = (error as { doneCount?: unknown }).doneCount;
  return typeof count === 'number' && Number.isSafeInteger(count) && count >= 0 ? count : undefined;
}

/**
 * `{ doneCount }` of an error that carries one (see doneCountOf), to spread into a WireError;
 * `{}` otherwise. Any error, also one answered with a public message only (CLOSED, INTERNAL):
 * the count says where the caller stands, and tells nothing of the server.
 */
export function doneCountToWire(error: unknown): { doneCount?: number } {
  const count = doneCountOf(error);
  return count === undefined ? {} : { doneCount: count };
}

/**
 * The `chain` of a DeadLetterLoopError on the wire (see WireError): two or more queue names,
 * as the core gives it; undefined for anything else.
 */
export function chainOf(error: Partial<WireError> | undefined): string[] | undefined {
  const chain = error?.chain as unknown;
  return Array.isArray(chain) &&
    chain.length >= 2 &&
    chain.every((name) => typeof name === 'string' && name !== '')
    ? (chain as string[])
    : undefined;
}

/**
 * `{ mayHaveTakenEffect: true }` for an error that says its call may or may not have taken
 * effect, to spread into a WireError; `{}` otherwise. Any error, also one answered with a public
 * message only (STORAGE_UNAVAILABLE): whether to retry blindly is the caller's to know.
 */
export function maybeToWire(error: unknown): { mayHaveTakenEffect?: true } {
  return mayHaveTakenEffect(error) ? { mayHaveTakenEffect: true } : {};
}
