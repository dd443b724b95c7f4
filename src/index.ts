/**
 * leaseq: a job queue built on visibility leases.
 *
 * - `LeaseQueue`: the pure core of SPEC.md, time as an explicit integer argument.
 * - `openEngine(url)`: storage for named queues (memory, SQLite, PostgreSQL), `now` explicit.
 * - `open(url)`: the Broker users call in-process; it supplies `now` in milliseconds. With an
 *   `http://` URL, the same interface over a leaseq server (`leaseq serve`).
 * - `work(queue, handler)`: the worker. `leaseq/testing`: deterministic test tools.
 *   `leaseq/server`: the HTTP server to embed.
 */
export * from './broker/index.js';
export {
  ConnectionLostError,
  type Fetch,
  openRemote,
  type ReceivedDelivery,
  RemoteBroker,
  RemoteError,
  type RemoteOptions,
  RemoteQueue,
  UnknownDeliveryError,
} from './client/index.js';
export * from './core/index.js';
export * from './engine/index.js';
export { type OpenOptions, open } from './open.js';
export * from './worker/index.js';
