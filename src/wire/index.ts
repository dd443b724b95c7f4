export { boundsFromWire, boundsToWire } from './bounds.js';
export {
  deliveryFromWire,
  deliveryToWire,
  inspectToWire,
  type WireDelivery,
  type WireSigner,
} from './delivery.js';
export {
  errorToWire,
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
