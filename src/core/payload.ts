import { ValidationError } from './errors.js';
import type { PublishJob } from './operations.js';

/**
 * Payloads are JSON (SPEC: opaque JSON). Engines keep them as JSON text, so what a consumer
 * gets is a copy of what was published, never the publisher's object, and a value that is
 * not JSON is refused at publish.
 */
export function encodePayload(payload: unknown, at: string): string | null {
  if (payload === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new ValidationError(`${at}.payload is not JSON: ${(error as Error).message}`);
  }
  if (text === undefined) throw new ValidationError(`${at}.payload is not JSON`);
  return text;
}

export function decodePayload(text: string | null): unknown {
  return text === null ? undefined : JSON.parse(text);
}

/** The jobs of a publish with their payloads as JSON text (null for none); labels name the entry. */
export function encodeJobs(jobs: readonly PublishJob[]): PublishJob[] {
  return jobs.map((job, index) => ({
    ...job,
    payload: encodePayload(job.payload, jobs.length === 1 ? 'job' : `jobs[${index}]`),
  }));
}
