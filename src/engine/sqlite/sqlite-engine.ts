import { StorageUnavailableError } from '../../core/index.js';
import type { Engine } from '../engine.js';
import type { EngineOptions } from '../open-engine.js';

export async function openSqliteEngine(path: string, _options: EngineOptions): Promise<Engine> {
  throw new StorageUnavailableError(`sqlite:${path}: the SQLite engine is not built yet`);
}
