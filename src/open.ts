import { type Broker, type BrokerOptions, EngineBroker, SystemClock } from './broker/index.js';
import { type EngineOptions, openEngine } from './engine/open-engine.js';

export interface OpenOptions extends BrokerOptions, EngineOptions {}

/**
 * Opens a Broker over the storage a URL names (see `openEngine`): `memory:`,
 * `sqlite:path/to.db` (default `sqlite:./data/leaseq.db`) or `postgres://…`.
 */
export async function open(url?: string, options: OpenOptions = {}): Promise<Broker> {
  const { clock, ...engineOptions } = options;
  const engine = await openEngine(url, engineOptions);
  if (clock !== undefined) return new EngineBroker(engine, { clock });
  const system = new SystemClock();
  if (engine.storageTime !== undefined) {
    const storageTime = engine.storageTime.bind(engine);
    await system.syncTo(storageTime);
  }
  return new EngineBroker(engine, { clock: system });
}
