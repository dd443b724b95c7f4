import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SqsError } from './errors.js';
import type { SqsInput } from './params.js';

/** A parsed request: the action and its members in the JSON protocol's shape. */
export interface ParsedRequest {
  action: string;
  input: SqsInput;
}

/** One of SQS's wire protocols: how requests are read and answers written. */
export interface SqsProtocol {
  parse(request: FastifyRequest, body: string): ParsedRequest;
  success(reply: FastifyReply, action: string, output: object, requestId: string): FastifyReply;
  failure(reply: FastifyReply, error: SqsError, requestId: string): FastifyReply;
}
