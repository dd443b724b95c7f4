/**
 * What is wrong with a leaseq server's URL as written, before anything connects: undefined
 * when its form is right. It is `http(s)://host:port`, with a path prefix where a proxy serves
 * leaseq under one; API paths are appended to it, so it carries no query or fragment, and the
 * API key travels as a header, not as credentials in the URL.
 */
export function serverUrlProblem(url: unknown): string | undefined {
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) {
    return `a server URL is http(s)://host:port, got ${JSON.stringify(typeof url === 'string' ? withoutSecrets(url) : url)}`;
  }
  if (!URL.canParse(url)) {
    return `server URL ${JSON.stringify(withoutSecrets(url))} is not a valid URL: http(s)://host:port, a port from 1 to 65535`;
  }
  const parsed = new URL(url);
  // Only the scheme and host are shown from here on: the rest may hold a secret.
  const shown = JSON.stringify(`${parsed.protocol}//${parsed.host}`);
  if (parsed.username !== '' || parsed.password !== '') {
    return `server URL ${shown} must not carry credentials: give the API key as apiKey (the CLI's LEASEQ_API_KEY)`;
  }
  if (parsed.port === '0') return `server URL ${shown} needs a port from 1 to 65535, got 0`;
  // The URL parser drops them, but not where API paths are appended: a trailing space would be
  // taken for a server that cannot be reached, a trailing tab for one without leaseq's routes.
  if (/\s/.test(url) || [...url].some(isControl)) {
    return `server URL ${shown} has a space, a line break or another control character (read from a file with its newline?)`;
  }
  if (/[?#]/.test(url)) {
    return `server URL ${shown} must not carry a ?query or #fragment: http(s)://host:port, and a path prefix if the server has one`;
  }
  return undefined;
}

/**
 * A URL the parser does not take, as a message may show it: credentials (up to the last `@`,
 * where a password holding an unencoded `@`, `?` or `#` ends) and a query or fragment may be
 * secrets, and are left out.
 */
function withoutSecrets(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? '';
  const rest = url.slice(scheme.length);
  const at = rest.lastIndexOf('@');
  const host = at === -1 ? rest : `***${rest.slice(at)}`;
  const end = host.search(/[?#]/);
  return `${scheme}${end === -1 ? host : `${host.slice(0, end)}…`}`;
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
  if ([...key].some(isControl)) return 'it has a control character';
  if (/\s/.test(key)) return 'it has a space';
  if (/[^!-~]/.test(key)) return 'it has a character outside ASCII';
  return undefined;
}

function isControl(char: string): boolean {
  return char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f;
}
