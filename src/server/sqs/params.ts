import { QUEUE_NAME } from '../../core/index.js';
import { invalidParameter, missingParameter, SqsError } from './errors.js';

/** A request's members after protocol parsing: JSON as sent, or the query form unflattened. */
export type SqsInput = Readonly<Record<string, unknown>>;

/** An integer member within bounds; JSON numbers or (query protocol) decimal text. */
export function optionalInteger(
  input: SqsInput,
  name: string,
  min: number,
  max: number,
): number | undefined {
  const raw = input[name];
  if (raw === undefined || raw === null) return undefined;
  const value = typeof raw === 'string' && /^-?\d{1,16}$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalidParameter(name, raw, `Must be between ${min} and ${max}, if provided.`);
  }
  return value;
}

export function requiredInteger(input: SqsInput, name: string, min: number, max: number): number {
  const value = optionalInteger(input, name, min, max);
  if (value === undefined) throw missingParameter(name);
  return value;
}

export function optionalString(input: SqsInput, name: string): string | undefined {
  const raw = input[name];
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string') throw invalidParameter(name, raw, 'Must be a string.');
  return raw;
}

/** A page's NextToken: the last queue name of the page before, as `pageToken` made it. */
export function optionalPageToken(input: SqsInput): string | undefined {
  const token = optionalString(input, 'NextToken');
  if (token === undefined) return undefined;
  const after = Buffer.from(token, 'base64url').toString('utf8');
  // Only a token this endpoint made: anything else would read as some place in the list.
  if (!QUEUE_NAME.test(after) || pageToken(after) !== token) {
    throw invalidParameter('NextToken', token, 'Invalid NextToken value.');
  }
  return after;
}

/** The NextToken of a page that ends at queue `last`. */
export function pageToken(last: string): string {
  return Buffer.from(last).toString('base64url');
}

export function requiredString(input: SqsInput, name: string): string {
  const value = optionalString(input, name);
  if (value === undefined || value === '') throw missingParameter(name);
  return value;
}

/** A list of strings; absent and empty are the same (sqs-consumer sends `[]`). */
export function stringList(input: SqsInput, name: string): string[] {
  const raw = input[name];
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw) || !raw.every((item) => typeof item === 'string')) {
    throw invalidParameter(name, raw, 'Must be a list of strings.');
  }
  return raw;
}

/** A string → string map (queue attributes, tags). */
export function stringMap(input: SqsInput, name: string): Record<string, string> {
  const raw = input[name];
  if (raw === undefined || raw === null) return {};
  if (!isRecord(raw) || !Object.values(raw).every((value) => typeof value === 'string')) {
    throw invalidParameter(name, raw, 'Must be a map of strings to strings.');
  }
  return { ...(raw as Record<string, string>) };
}

/** A map of structures (message attributes). */
export function recordMap(input: SqsInput, name: string): Record<string, SqsInput> {
  const raw = input[name];
  if (raw === undefined || raw === null) return {};
  if (!isRecord(raw) || !Object.values(raw).every(isRecord)) {
    throw invalidParameter(name, raw, 'Must be a map of structures.');
  }
  return raw as Record<string, SqsInput>;
}

export const MAX_BATCH_ENTRIES = 10;
const ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * The entries of a batch request, checked as SQS checks the whole batch: 1..10 entries, each
 * with an Id of 1..80 letters, digits, `-` and `_`, no Id twice.
 */
export function batchEntries(input: SqsInput, name: string): (SqsInput & { Id: string })[] {
  const raw = input[name];
  if (raw === undefined || raw === null || (Array.isArray(raw) && raw.length === 0)) {
    throw new SqsError('EmptyBatchRequest', 'There should be at least one entry in the request.');
  }
  if (!Array.isArray(raw) || !raw.every(isRecord)) {
    throw invalidParameter(name, raw, 'Must be a list of entries.');
  }
  if (raw.length > MAX_BATCH_ENTRIES) {
    throw new SqsError(
      'TooManyEntriesInBatchRequest',
      `Maximum number of entries per request are ${MAX_BATCH_ENTRIES}. You have sent ${raw.length}.`,
    );
  }
  const seen = new Set<string>();
  for (const entry of raw) {
    const id = entry.Id;
    if (typeof id !== 'string' || !ENTRY_ID.test(id)) {
      throw new SqsError(
        'InvalidBatchEntryId',
        'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.',
      );
    }
    if (seen.has(id)) {
      throw new SqsError('BatchEntryIdsNotDistinct', `Id ${id} repeated.`);
    }
    seen.add(id);
  }
  return raw as (SqsInput & { Id: string })[];
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
