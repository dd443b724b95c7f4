import { type Broker, type BrokerOptions, EngineBroker } from './broker/index.js';
import { type EngineOptions, openEngine } from './engine/open-engine.js';

export interface OpenOptions extends BrokerOptions, EngineOptions {}

/**
 * Opens a Broker over the storage a URL names (see `openEngine`): `memory:`,
 * `sqlite:path/to.db` (default `sqlite:./data/leaseq.db`) or `postgres://…`.
 */
export async function open(url?: string, options: OpenOptions = {}): Promise<Broker> {
  const { clock, ...engineOptions } = options;
  const engine = await openEngine(url, engineOptions);
  return new EngineBroker(engine, clock === undefined ? {} : { clock });
}
