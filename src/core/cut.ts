/**
 * `end`, or one less where the code unit before it opens a surrogate pair: text cut there never
 * ends inside a pair.
 */
export function cutBefore(text: string, end: number): number {
  const last = text.charCodeAt(end - 1);
  return last >= 0xd800 && last <= 0xdbff ? end - 1 : end;
}
