/**
 * The leaseq HTTP client: `openRemote(url, { apiKey, fetch })` gives a Broker whose queues
 * implement the same Queue interface as in-process ones.
 */

export type { WireDelivery } from '../wire/index.js';
export {
  answeredByServer,
  ConnectionLostError,
  errorFromResponse,
  RemoteError,
  UnknownDeliveryError,
} from './errors.js';
export { type Fetch, RequestAborted } from './http.js';
export { publishJobBytes, publishRoom } from './operation-batcher.js';
export { openRemote, RemoteBroker, type RemoteOptions } from './remote-broker.js';
export { type ReceivedDelivery, RemoteQueue } from './remote-queue.js';
