import type { IncomingHttpHeaders } from 'node:http';
import { isLoopback } from './config.js';

/**
 * Why a request that a web browser may have sent on a page's behalf is refused, or undefined.
 * Clients that are not browsers (the client, the CLI, curl, AWS SDKs) send no Origin and name
 * the server as they reached it, so neither rule concerns them.
 *
 * - A page of another origin may not change anything (any method but GET and HEAD) nor open
 *   the stream. Plain HTTP routes take JSON bodies only, which a page cannot send elsewhere
 *   without the server's consent, but the SQS endpoint takes form bodies, as SQS does, and
 *   browsers apply no same-origin policy to WebSockets.
 * - A server without API keys answers only requests that name it by a loopback name: a page
 *   whose own host name was made to resolve to 127.0.0.1 (DNS rebinding) is of the same origin
 *   as far as the browser knows, but names its own host.
 */
export function browserRefusal(
  method: string,
  headers: IncomingHttpHeaders,
  keysConfigured: boolean,
): string | undefined {
  const host = headers.host?.toLowerCase();
  if (!keysConfigured && host !== undefined && !isLoopbackHost(host)) {
    return `this server has no API keys and answers only requests to a loopback name (127.0.0.1, localhost, [::1]), not to ${JSON.stringify(host)}: configure API keys to serve other names`;
  }
  const origin = headers.origin;
  // A WebSocket is opened by a GET.
  const changes = (method !== 'GET' && method !== 'HEAD') || headers.upgrade !== undefined;
  if (origin === undefined || !changes) return undefined;
  if (host !== undefined && originHost(origin) === host) return undefined;
  return `a request from the web page origin ${JSON.stringify(origin)} is refused: this server takes browser requests only from its own pages (${host ?? 'no Host header'})`;
}

function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host.toLowerCase() || undefined;
  } catch {
    return undefined;
  }
}

/** A Host header (`name[:port]`, `[v6][:port]`) naming what a keyless server may listen on. */
function isLoopbackHost(host: string): boolean {
  return isLoopback(
    host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d*$/, ''),
  );
}
