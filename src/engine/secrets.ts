import { randomBytes } from 'node:crypto';
import { ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';

/** A secret kept in the storage: the current value, and the one it replaced while still valid. */
export interface StoredSecret {
  /** 32 random bytes, hex. */
  current: string;
  /** The value before the last rotation, accepted until `previousUntil` (ms). */
  previous?: string;
  /** The broker's time (ms) until which `previous` is accepted; absent without `previous`. */
  previousUntil?: number;
}

/** A fresh secret: 32 random bytes as hex. */
export function newSecretValue(): string {
  return randomBytes(32).toString('hex');
}

/** Names of stored secrets: what a SQL key and a log line can carry. */
export const SECRET_NAME = /^[a-z][a-z0-9-]{0,63}$/;

export function checkSecretName(name: string): void {
  if (typeof name !== 'string' || !SECRET_NAME.test(name)) {
    throw new ValidationError(`secret name must match ${SECRET_NAME}, got ${show(name)}`);
  }
}
