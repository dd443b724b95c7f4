import type { SqsCall, SqsServices } from '../context.js';

/** One SQS action: the members of its answer (JSON protocol names), or an SqsError. */
export type ActionHandler = (call: SqsCall, sqs: SqsServices) => Promise<object>;

export type ActionTable = Readonly<Record<string, ActionHandler>>;

/** A batch entry that failed alone, as SQS reports it. */
export interface FailedEntry {
  Id: string;
  SenderFault: boolean;
  Code: string;
  Message: string;
}
