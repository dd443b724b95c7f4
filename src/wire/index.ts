export { boundsFromWire, boundsToWire } from './bounds.js';
export {
  deliveryFromWire,
  deliveryToWire,
  inspectToWire,
  MAX_INSPECT_LIMIT,
  type WireDelivery,
  type WireSigner,
} from './delivery.js';
export { type ErrorCode, type ServerErrorCode, STATUS_BY_CODE } from './errors.js';
export {
  chainOf,
  doneCountOf,
  doneCountToWire,
  errorToWire,
  MAX_RECEIPT_LENGTH,
  maybeToWire,
  operationFromWire,
  operationToWire,
  outcomeToWire,
  valueToWire,
  type WireError,
  type WireOperation,
  type WireOutcome,
  type WireValue,
  type WireVerifier,
  type WireWrapper,
} from './operations.js';
export { apiKeyProblem, serverUrlProblem } from './server-url.js';
export {
  type BatchFrame,
  type ClientFrame,
  type CreditFrame,
  clientFrameFromWire,
  type DeliveriesFrame,
  type ErrorFrame,
  frameId,
  type ReadyFrame,
  type ResultsFrame,
  type ServerFrame,
  STREAM_CLOSE,
  type StreamLimits,
  type SubscribedFrame,
  type SubscribeFrame,
  type UnsubscribedFrame,
  type UnsubscribeFrame,
} from './stream.js';
