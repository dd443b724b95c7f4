import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorBody, type ErrorCode, mapError, STATUS_BY_CODE } from './errors.js';

/**
 * Errors Fastify answers before any route or error handler runs (a malformed percent-encoding,
 * an over-long path segment), in the API's `{ error: { code, message } }` shape.
 */
export function answerFrameworkError(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const answer = frameworkAnswer(error);
  // No route hooks run here: the body is sent as text, ending with a newline like the others.
  return reply
    .status(answer.status)
    .type('application/json; charset=utf-8')
    .send(`${JSON.stringify(answer.body)}\n`);
}

function frameworkAnswer(error: FastifyError): { status: number; body: ErrorBody } {
  if (error.code === 'FST_ERR_BAD_URL') {
    return answer('INVALID_ARGUMENT', 'the URL path is not valid percent-encoded UTF-8');
  }
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return answer('URI_TOO_LONG', 'a segment of the URL path is longer than 4096 characters');
  }
  return mapError(error);
}

function answer(code: ErrorCode, message: string): { status: number; body: ErrorBody } {
  return { status: STATUS_BY_CODE[code], body: { error: { code, message } } };
}

/**
 * Node's HTTP parser refuses a request before Fastify sees it (headers too large, not HTTP,
 * too slow): the answer is written on the raw socket, still in the API's shape.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const { status, body } = clientAnswer(error.code);
  const text = `${JSON.stringify(body)}\n`;
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(text)}`,
      'Connection: close',
      '',
      text,
    ].join('\r\n'),
  );
}

function clientAnswer(code: string | undefined): { status: number; body: ErrorBody } {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return answer('REQUEST_TIMEOUT', 'the request did not arrive in time');
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    return answer('HEADERS_TOO_LARGE', 'the request line and headers are larger than 16 KiB');
  }
  return answer('INVALID_ARGUMENT', 'the request is not valid HTTP/1.1');
}

/**
 * A request whose Expect header asks for more than `100-continue`, the one expectation HTTP
 * defines: refused with 417 as Node does (RFC 9110 §10.1.1), but in the API's shape rather than
 * with an empty body. Its body is not read: the connection closes after the answer.
 */
export function answerExpectation(request: IncomingMessage, response: ServerResponse): void {
  const asked = JSON.stringify(String(request.headers.expect).slice(0, 64));
  const { body } = answer(
    'INVALID_ARGUMENT',
    `the Expect header asks for ${asked}, which this server cannot meet: it knows only 100-continue; send the request without it`,
  );
  const text = `${JSON.stringify(body)}\n`;
  response.writeHead(417, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    connection: 'close',
  });
  response.end(text);
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};
