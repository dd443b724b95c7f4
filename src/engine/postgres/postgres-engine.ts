import { StorageUnavailableError } from '../../core/index.js';
import type { Engine } from '../engine.js';
import type { EngineOptions } from '../open-engine.js';

export async function openPostgresEngine(url: string, _options: EngineOptions): Promise<Engine> {
  throw new StorageUnavailableError(`${url}: the PostgreSQL engine is not built yet`);
}
