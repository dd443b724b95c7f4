import http from 'node:http';
import https from 'node:https';
import { onAbort } from '../broker/on-abort.js';

/** What the transport needs of an HTTP exchange, whatever sends it. */
export interface Exchange {
  status: number;
  text: string;
  /** The Content-Type header, when the answer had one (to say what came back). */
  contentType?: string | undefined;
  /** The Location header of a redirect, when the answer had one. */
  location?: string | undefined;
}

export interface ExchangeRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Cuts the exchange: its connection is closed at once, with any answer still on its way. */
  signal: AbortSignal;
  /**
   * Ends what the server is waiting for (a long poll) without cutting the exchange: the
   * connection's sending side is closed, which a leaseq server takes for its client gone, so it
   * stops waiting; an answer it had sent by then is still read to its end. The exchange is cut
   * once the answer has not come ANSWER_AFTER_END_MS after that.
   */
  endWait?: AbortSignal;
}

/**
 * How long an exchange whose wait was ended (ExchangeRequest.endWait) waits for the server's
 * answer or its end of the connection (a healthy server sends either at once) before it is cut.
 */
export const ANSWER_AFTER_END_MS = 1000;

/**
 * Requests over node:http with keep-alive connections: on loopback a fraction of the CPU that
 * the built-in fetch spends per request, which is what a busy consumer pays for every ack.
 */
export class NodeHttpSender {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 256 });

  send(url: string, request: ExchangeRequest): Promise<Exchange> {
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    const transport = secure ? https : http;
    return new Promise<Exchange>((resolve, reject) => {
      let answering = false;
      let cut: NodeJS.Timeout | undefined;
      let unwatch: (() => void) | undefined;
      const done = () => {
        clearTimeout(cut);
        unwatch?.();
      };
      const outgoing = transport.request(
        target,
        {
          method: request.method,
          headers: {
            ...request.headers,
            ...(request.body === undefined
              ? {}
              : { 'content-length': String(Buffer.byteLength(request.body)) }),
          },
          agent: secure ? this.httpsAgent : this.httpAgent,
          signal: request.signal,
        },
        (response) => {
          answering = true;
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            done();
            resolve({
              status: response.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
              contentType: response.headers['content-type'],
              location: response.headers.location,
            });
          });
          response.on('error', (error) => {
            done();
            reject(error);
          });
        },
      );
      outgoing.on('error', (error) => {
        done();
        reject(error);
      });
      const { endWait } = request;
      if (endWait !== undefined && !endWait.aborted) {
        unwatch = onAbort(endWait, () => {
          unwatch = undefined;
          cut = setTimeout(() => outgoing.destroy(endedError()), ANSWER_AFTER_END_MS);
          // Its answer is coming in: read to its end.
          if (answering) return;
          const socket = outgoing.socket;
          // Not sent yet (no connection, or one still being made): nothing of it reached the
          // server, and nothing can come back.
          if (socket === null || socket.connecting) {
            outgoing.destroy(endedError());
            return;
          }
          // Not cut: an answer the server sent before it saw this end comes in all the same,
          // where closing the connection would throw it away (the jobs it carries left leased).
          // The connection is not used again.
          outgoing.shouldKeepAlive = false;
          socket.end();
        });
      }
      outgoing.end(request.body);
    });
  }

  /** Closes the idle keep-alive connections. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** The error an exchange ended by its `endWait` fails with when no answer came. */
function endedError(): Error {
  return Object.assign(new Error('the request was ended before its answer came'), {
    name: 'AbortError',
    code: 'ABORT_ERR',
  });
}
