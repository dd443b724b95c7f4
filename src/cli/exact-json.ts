import { checkJsonBody } from '../server/limits.js';

/**
 * JSON text given to the CLI (a payload argument, a line of `publish --file`, a schedule's
 * `--payload`), read as the server reads a request body (R18): a number JSON.parse would not
 * keep exactly (`1e400` reads as Infinity and would be sent as null, `1e-400` as 0, a whole
 * number beyond 2^53 - 1 loses digits) is refused with a ValidationError naming `subject`,
 * rather than sent changed. Text that is not JSON throws JSON.parse's SyntaxError.
 */
export function parseExactJson(text: string, subject: string): unknown {
  const value: unknown = JSON.parse(text);
  // Depth and prototype keys are the client's and the server's to refuse, in their own words.
  checkJsonBody(value, Number.POSITIVE_INFINITY, 'keep', text, subject);
  return value;
}
