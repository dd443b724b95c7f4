import { type Broker, type BrokerOptions, EngineBroker, SystemClock } from './broker/index.js';
import type { RemoteOptions } from './client/remote-broker.js';
import { type EngineOptions, openEngine } from './engine/open-engine.js';

export interface OpenOptions extends BrokerOptions, EngineOptions, RemoteOptions {}

/**
 * Opens a Broker over the storage a URL names (see `openEngine`): `memory:`,
 * `sqlite:path/to.db` (default `sqlite:./data/leaseq.db`) or `postgres://…`; or over a leaseq
 * server, `http://host:7700` (see `openRemote`: `apiKey`, `fetch`).
 */
export async function open(url?: string, options: OpenOptions = {}): Promise<Broker> {
  if (url !== undefined && /^https?:\/\//i.test(url)) {
    const { openRemote } = await import('./client/remote-broker.js');
    return openRemote(url, options);
  }
  const { clock, ...engineOptions } = options;
  // Several processes may share the storage: a call never fails because another committed first.
  const engine = await openEngine(url, { clockMode: 'follow', ...engineOptions });
  if (clock !== undefined) return new EngineBroker(engine, { clock });
  const system = new SystemClock();
  if (engine.storageTime !== undefined) {
    const storageTime = engine.storageTime.bind(engine);
    await system.syncTo(storageTime);
  }
  return new EngineBroker(engine, { clock: system });
}
