import { cutBefore } from './cut.js';
import { ValidationError } from './errors.js';

/**
 * R18: U+0000 or a lone surrogate. No SQL engine can keep such text in a column exactly
 * (PostgreSQL refuses U+0000; UTF-8 has no lone surrogates, so they become U+FFFD), so text that
 * names something (job ids, dead-letter reasons) must be well-formed Unicode without U+0000.
 * With the `u` flag a surrogate pair is one code point, so only lone surrogates match.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what is refused
const UNSTORABLE = /[\u0000\ud800-\udfff]/u;

/** True when every engine stores `text` exactly (R18). */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

export const STORABLE_TEXT_RULE = 'well-formed Unicode without U+0000';

/** The longest dead-letter reason or attempt error, in UTF-16 code units (R18). */
export const MAX_REASON_LENGTH = 1024;

// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what is replaced
const UNSTORABLE_ALL = /[\u0000\ud800-\udfff]/gu;

/**
 * Free text (an error message) made storable (R18) within `max` UTF-16 code units: U+0000 and
 * lone surrogates become U+FFFD, and longer text is cut, never inside a surrogate pair, ending
 * in `…`. Undefined for empty text, which no text field takes.
 */
export function storableText(text: string, max: number): string | undefined {
  const clean = isStorableText(text) ? text : text.replace(UNSTORABLE_ALL, '\ufffd');
  if (clean.length === 0) return undefined;
  if (clean.length <= max) return clean;
  return `${clean.slice(0, cutBefore(clean, max - 1))}…`;
}

/** R18: a job id looked up that no engine could have stored is a bad argument, not a miss. */
export function checkLookedUpId(id: unknown): void {
  if (typeof id !== 'string' || id.length === 0 || id.length > LONGEST_ID) {
    const got = typeof id === 'string' ? `${id.length} characters` : typeof id;
    throw new ValidationError(
      `id must be a string of 1 to ${LONGEST_ID} characters (R18), got ${got}`,
    );
  }
  if (!isStorableText(id)) throw new ValidationError(`id must be ${STORABLE_TEXT_RULE} (R18)`);
}

/** validate.ts's MAX_ID_LENGTH, which imports this module. */
const LONGEST_ID = 256;

/** The id the n-th generated id of a queue gets (a publish without an id, R4). */
export function generatedId(n: number): string {
  return `job-${n}`;
}

/**
 * Whether an id has the form generated ids have. Until an id of that form arrives from a
 * caller or another queue, a queue's generated ids are unique by construction: no look-up.
 */
export function hasGeneratedForm(id: string): boolean {
  return id.startsWith('job-');
}

/**
 * The order of names in every engine's lists: by UTF-16 code units, which for the ASCII of queue
 * and schedule names is byte order, as SQLite's BINARY collation sorts (a PostgreSQL
 * collation may sort otherwise, so SQL engines sort their rows with this too).
 */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
