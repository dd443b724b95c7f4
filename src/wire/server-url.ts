/**
 * What is wrong with a leaseq server's URL as written, before anything connects: undefined
 * when its form is right. It is `http(s)://host:port`, with a path prefix where a proxy serves
 * leaseq under one; API paths are appended to it, so it carries no query or fragment, and the
 * API key travels as a header, not as credentials in the URL.
 */
export function serverUrlProblem(url: unknown): string | undefined {
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) {
    return `a server URL is http(s)://host:port, got ${JSON.stringify(url)}`;
  }
  if (!URL.canParse(url)) {
    return `server URL ${JSON.stringify(url)} is not a valid URL: http(s)://host:port, a port from 1 to 65535`;
  }
  const parsed = new URL(url);
  // Only the scheme and host are shown from here on: the rest may hold a secret.
  const shown = JSON.stringify(`${parsed.protocol}//${parsed.host}`);
  if (parsed.username !== '' || parsed.password !== '') {
    return `server URL ${shown} must not carry credentials: give the API key as apiKey (the CLI's LEASEQ_API_KEY)`;
  }
  if (parsed.port === '0') return `server URL ${shown} needs a port from 1 to 65535, got 0`;
  if (/[?#]/.test(url)) {
    return `server URL ${shown} must not carry a ?query or #fragment: http(s)://host:port, and a path prefix if the server has one`;
  }
  return undefined;
}

/**
 * What keeps `key` from being an API key, or undefined. The server takes only printable ASCII
 * without spaces; a line break (a key read from a file with its newline) or another control
 * character cannot even go in a header, and would be taken for a server that cannot be reached.
 * The key itself is not shown: it is a secret.
 */
export function apiKeyProblem(key: string): string | undefined {
  if (key === '') return 'it is empty';
  if (/[\r\n]/.test(key)) return 'it has a line break (read from a file with its newline?)';
  const control = (char: string) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f;
  if ([...key].some(control)) return 'it has a control character';
  if (/\s/.test(key)) return 'it has a space';
  if (/[^!-~]/.test(key)) return 'it has a character outside ASCII';
  return undefined;
}
