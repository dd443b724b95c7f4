/**
 * What a thrown value says, for a message about it: an error's message, else the value as
 * text. Never throws itself: a caller's work may throw anything (null, an object without a
 * prototype), and a throw while translating it would fail what handles it.
 */
export function failureText(error: unknown): string {
  try {
    const message = (error as { message?: unknown } | null | undefined)?.message;
    return typeof message === 'string' ? message : String(error);
  } catch {
    return 'a failure that cannot be shown';
  }
}
